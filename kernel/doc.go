// Package kernel is chio's decision core: it verifies capabilities and call
// proofs, runs the guard pipeline (Allow / Deny / PendingApproval, deny
// dominates), dispatches allowed calls exactly once, and has every decision
// signed into the receipt log before it is answered.
//
// kernel must never import a transport (net/http), a store driver (bbolt) or
// a channel SDK (slack-go); deps_test.go enforces it. Those live behind the
// Store and Dispatcher interfaces.
package kernel
