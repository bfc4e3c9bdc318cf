// Package channels tells humans about approval requests: webhook, Slack,
// email and friends. It is the kernel's Notifier (DESIGN.md "Channels").
//
// Three rules shape everything here:
//
//   - A channel only notifies. It can never approve, deny or otherwise change
//     a request: the only way back is a signed approval token presented to the
//     kernel's respond path, exactly like any other approver.
//   - Notification happens after the request is durable. A notification that
//     is dropped (queue full, retries exhausted, shutdown) never loses the
//     request: it stays visible on the dashboard and on GET /approvals/pending,
//     and the failure is recorded on the request (OnFailure, wired by the
//     daemon to kernel.RecordNotifyFailure) and counted in /metrics.
//   - Notify never blocks the kernel. Work goes into bounded per-channel
//     queues served by small worker pools; retries use exponential backoff.
//
// A Channel makes one delivery attempt per Deliver call; the Hub owns
// queueing, retries, metrics and failure reporting. A channel signals "do
// not retry" by returning an error wrapping ErrPermanent.
package channels
