// Package chio is the Go SDK for agents (and their approvers) that call
// tools through a chio kernel (chiod).
//
// An agent holds an Ed25519 key and a capability issued for that key. It
// calls a tool with [Client.CallTool], which answers with one of three typed
// results: [*Allowed] (the tool ran), [*PendingApproval] (a human must
// decide) or [*Denied]. A denial is a value, not an error: errors are for
// transport failures and bad input, and carry [*APIError] with sentinels
// such as [ErrUnauthorized] for errors.Is.
//
// A pending call is durable in the kernel. The agent may wait for it with
// [Client.Await], or exit and let another process (holding the same key)
// await it later by approval id or request id. Awaiting a call that has
// already executed returns its stored output at once. Every call carries a
// request id; a retry after a dropped connection re-sends the same id and
// the kernel answers with the first outcome, so a tool never runs twice.
//
// [Client.Confirm] and [Client.Ask] stop mid-run for a human yes/no or a
// small form. They are the kernel's `confirm` and `ask` verbs: governed by
// grants like any tool, answered with a signed approval token, receipted.
//
// The approver side ([SignApproval], [SignDenial], [Client.Approval],
// [Client.Respond]) signs and presents approval tokens.
//
// This package owns the client side of SPEC §3 and §6. It must never import
// the server (internal/httpapi, internal/daemon, the store drivers) or the
// CLI (internal/cli); deps_test.go enforces that.
package chio
