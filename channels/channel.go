package channels

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/chiokernel/chio/approval"
)

// Channel delivers notifications about approval requests to one medium.
//
// Deliver makes exactly one attempt; the Hub retries. It must honour ctx
// (cancelled on timeout and on Hub.Close) and must treat req as read-only:
// the same snapshot is shared with the other channels and the event stream.
// Returning an error that wraps ErrPermanent stops the Hub from retrying.
type Channel interface {
	Name() string
	Deliver(ctx context.Context, event string, req *approval.Request) error
}

// AttemptLimiter is optionally implemented by a Channel whose configuration
// sets its own attempt budget (the webhook's `retries`). It overrides
// HubOptions.MaxAttempts for that channel; values < 1 are ignored.
type AttemptLimiter interface {
	MaxAttempts() int
}

// ErrPermanent marks a delivery failure that retrying cannot fix (a 4xx
// answer, an unencodable request). Wrap it: fmt.Errorf("%w: ...", ErrPermanent).
var ErrPermanent = errors.New("permanent delivery failure")

// Metric results reported through HubOptions.Metric.
const (
	ResultOK     = "ok"     // delivered
	ResultRetry  = "retry"  // an attempt failed and will be retried
	ResultFailed = "failed" // given up: retries exhausted, permanent error, queue full or shutdown
)

// Results are every result HubOptions.Metric reports.
func Results() []string { return []string{ResultOK, ResultRetry, ResultFailed} }

// Channel names that need no push from the hub: poll is GET
// /approvals/pending, terminal is `chio approval watch` (both read the
// durable store). The dashboard is fed by the kernel's event stream.
const (
	NamePoll      = "poll"
	NameTerminal  = "terminal"
	NameDashboard = "dashboard"
)

type deliveryIDKey struct{}

// WithDeliveryID returns ctx carrying the delivery id of a job. The Hub sets
// one id per (event, channel) job, stable across its retries, so receivers
// can de-duplicate.
func WithDeliveryID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, deliveryIDKey{}, id)
}

// DeliveryID returns the id set by WithDeliveryID, or "".
func DeliveryID(ctx context.Context) string {
	id, _ := ctx.Value(deliveryIDKey{}).(string)
	return id
}

// Backoff is the wait between attempts: Initial, then multiplied by Factor
// after each failure, capped at Max, each wait randomised by ±Jitter (a
// fraction). Zero fields take the defaults below; tests shrink Initial/Max.
type Backoff struct {
	Initial time.Duration // default 200ms
	Max     time.Duration // default 30s
	Factor  float64       // default 2
	Jitter  float64       // default 0.2; negative disables jitter
}

// Backoff defaults.
const (
	DefaultBackoffInitial = 200 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	DefaultBackoffFactor  = 2.0
	DefaultBackoffJitter  = 0.2
)

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Factor < 1 {
		b.Factor = DefaultBackoffFactor
	}
	if b.Jitter == 0 {
		b.Jitter = DefaultBackoffJitter
	}
	if b.Jitter > 1 {
		b.Jitter = 1
	}
	return b
}

// Delay is the wait after the n-th failed attempt (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	b = b.withDefaults()
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Factor
	}
	d = min(d, float64(b.Max))
	if b.Jitter > 0 {
		d *= 1 + b.Jitter*(2*rand.Float64()-1) // uniform in [1-j, 1+j]
	}
	return time.Duration(max(d, 0))
}
