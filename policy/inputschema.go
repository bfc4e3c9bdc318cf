package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/schemaref"
)

// Declared input schemas. A tool of an http server may declare the JSON
// Schema its arguments must match (input_schema on [[servers.tools]]): the
// MCP gateway offers it to agents as the tool's inputSchema, and the kernel
// holds every call and every amendment to it, as it does an MCP tool's
// upstream schema. It is compiled when the policy is validated; a schema
// that cannot be compiled is a load error, never a surprise at call time.
// MCP and builtin tools carry their own schemas, so only http tools may
// declare one.

// ErrInvalidArguments is wrapped by InputSchema.Validate's errors. The text
// is the one an MCP tool's schema failure carries: agents see both schemas
// as the tool's inputSchema.
var ErrInvalidArguments = errors.New("arguments do not match the tool's inputSchema")

// InputSchema is a tool's declared input schema, compiled.
type InputSchema struct {
	raw      json.RawMessage // canonical JSON (RFC 8785)
	resolved *jsonschema.Resolved
}

// JSON is the schema as offered to agents (canonical JSON).
func (s *InputSchema) JSON() json.RawMessage { return s.raw }

// Validate checks a call's arguments (a JSON object; empty means {})
// against the schema.
func (s *InputSchema) Validate(args json.RawMessage) error {
	return ValidateArguments(s.resolved, args)
}

// ValidateArguments checks a call's arguments (a JSON object; empty means
// {}) against a compiled schema: a policy's input_schema, or an MCP tool's
// inputSchema (internal/dispatch/mcp), so both refuse alike. Its errors
// wrap ErrInvalidArguments.
func ValidateArguments(schema *jsonschema.Resolved, args json.RawMessage) (err error) {
	defer func() {
		// A validator bug must refuse the call, not end chiod's goroutine.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the validator failed: %v", ErrInvalidArguments, r)
		}
	}()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return nil
}

// InputSchema returns the declared input schema of server's tool, or nil
// when the tool declares none (or is not declared).
func (p *Policy) InputSchema(server, tool string) *InputSchema {
	return p.inputSchemas[serverTool{server, tool}]
}

// compileInputSchema checks a declared schema and compiles it. The
// returned error is the message for the file (the caller names the line).
func compileInputSchema(text string) (_ *InputSchema, err error) {
	defer func() {
		// As for the TOML parser: a bad file must never take chiod down.
		if r := recover(); r != nil {
			err = fmt.Errorf("input_schema could not be compiled: %v", r)
		}
	}()
	if len(text) > MaxInputSchemaBytes {
		return nil, fmt.Errorf("input_schema is %d bytes; the limit is %d", len(text), MaxInputSchemaBytes)
	}
	// Strict JSON (no duplicate members, exact numbers, bounded depth), held
	// in canonical form: the policy hash covers the schema's meaning, not
	// its layout, and agents are offered exactly what is enforced.
	raw, err := canon.Canonicalize([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("input_schema is not JSON: %v", err)
	}
	// jsonschema.Schema matches member names case-insensitively ({"Type":
	// "object"} would read as an object schema); MCP reads "type" exactly.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || string(top["type"]) != `"object"` {
		return nil, errors.New(`input_schema must be a JSON Schema object with "type": "object" (a tool's arguments are a JSON object)`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("input_schema is not a valid JSON Schema: %v", err)
	}
	// No loader: a $ref to another document is refused, so validation never
	// fetches anything.
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("input_schema is not a valid JSON Schema: %v", err)
	}
	// jsonschema-go would follow a loop of references until the stack
	// overflows, which ends the process, and has no budget for a schema
	// whose cost doubles with each level of nesting: refuse both
	// (internal/schemaref) before anything validates against the schema —
	// checking defaults does.
	if err := schemaref.Check(raw); err != nil {
		return nil, fmt.Errorf("input_schema cannot be used: %v", err)
	}
	// Defaults are checked against their schemas, which also refuses a
	// $schema version the validator does not support.
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("input_schema is not a valid JSON Schema: %v", err)
	}
	var doc any
	_ = json.Unmarshal(raw, &doc) // canonical JSON: cannot fail
	if hasMember(doc, "x-mcp-header") {
		// The MCP SDK refuses to offer a tool whose x-mcp-header
		// annotations it disputes; chio does not forward such headers.
		return nil, errors.New("input_schema must not use x-mcp-header: chio does not map arguments to HTTP headers")
	}
	return &InputSchema{raw: raw, resolved: rs}, nil
}

// hasMember reports whether an object anywhere in v has a member name.
func hasMember(v any, name string) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == name || hasMember(x, name) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasMember(x, name) {
				return true
			}
		}
	}
	return false
}

// toolInputSchema checks and compiles a tool's input_schema (tb is the
// tool's key path) and keeps it in the policy.
func (v *validator) toolInputSchema(tb []string, s *Server, t *Tool) {
	if t.InputSchema == "" {
		return // none declared (an empty one is refused as it is decoded)
	}
	if s.Transport != TransportHTTP {
		own := "an mcp server's tools are offered with their upstream's own inputSchema"
		if s.Transport == TransportBuiltin {
			own = "a builtin tool has its own schema"
		}
		v.at(tb, k("input_schema"), "input_schema is for tools of http servers: %s (server %q is %q)", own, s.ID, s.Transport)
		return
	}
	schema, err := compileInputSchema(string(t.InputSchema))
	if err != nil {
		v.at(tb, k("input_schema"), "%s", clip(err.Error()))
		return
	}
	t.InputSchema = JSONText(schema.raw)
	if v.p.inputSchemas == nil {
		v.p.inputSchemas = map[serverTool]*InputSchema{}
	}
	v.p.inputSchemas[serverTool{s.ID, t.Name}] = schema
}
