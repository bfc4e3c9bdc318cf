package kernel

// checkInputSchema holds a call's arguments to the input schema the policy
// declares for its tool (input_schema on an http server's tool), as
// internal/dispatch/mcp's SchemaGuard holds an MCP tool's to its upstream's.
// It reads the schema from the policy the decision is made under, so a
// reload changes it for the next decision. It is not an approval trigger:
// it runs again when an approved call resumes, on amended arguments too,
// and on_trigger cannot route it to a human (a malformed call is not a
// question for one).
func checkInputSchema(r *Request) (Result, error) {
	if r.Policy == nil {
		return allow() // no policy declares a schema (unit tests' requests)
	}
	s := r.Policy.InputSchema(r.Call.Server, r.Call.Tool)
	if s == nil {
		return allow()
	}
	if err := s.Validate(r.Call.Arguments); err != nil {
		return Result{Deny, GuardInputSchema, err.Error()}, nil
	}
	return allow()
}
