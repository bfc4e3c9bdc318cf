// Package dispatch delivers calls the kernel has allowed to the tool servers
// named in the policy. A Router implements kernel.Dispatcher and routes each
// request by server id to one of two transports:
//
//   - "http": the call is POSTed as JSON to the server's URL, with the
//     request id as Idempotency-Key, a per-server timeout and a bounded
//     response size.
//   - "builtin": demo tools run in-process (echo, issue_refund,
//     delete_file) whose effects are observable on disk under
//     <dataDir>/builtin/ and happen at most once per request id.
//
// A tool that runs and fails is a DispatchResult.ToolError; a call that could
// not be delivered or answered properly is a Go error. The kernel records both.
package dispatch
