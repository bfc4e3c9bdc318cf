package channels

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/uuid/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

var _ kernel.TellingNotifier = (*Hub)(nil)

// Hub defaults.
const (
	DefaultMaxAttempts    = 6
	DefaultQueueSize      = 10000
	DefaultQueueBytes     = 32 << 20
	DefaultWorkers        = 2
	DefaultAttemptTimeout = 30 * time.Second
)

// HubOptions configures a Hub. Only Channels is required.
type HubOptions struct {
	// Channels are the push channels configured for this daemon. Names must
	// be unique; a nil channel or a duplicate name panics in NewHub.
	Channels []Channel
	// Backoff between attempts of one job (defaults in Backoff).
	Backoff Backoff
	// MaxAttempts per job, the first included (default 6). A channel that
	// implements AttemptLimiter sets its own.
	MaxAttempts int
	// AttemptTimeout bounds one Deliver call via its ctx (default 30s).
	AttemptTimeout time.Duration
	// OnFailure records a notification that was given up on. The daemon
	// wires kernel.RecordNotifyFailure. It may block and is never called on
	// Notify's goroutine; it must be safe for concurrent use.
	OnFailure func(approvalID, channel, msg string)
	// Metric counts results (ResultOK, ResultRetry, ResultFailed) per
	// channel, e.g. httpapi Metrics.Notify. It must be cheap and must not
	// block: Notify calls it for dropped notifications.
	Metric func(channel, result string)
	// QueueSize bounds each channel's queue of jobs (default 10000); one
	// subject may hold max(16, QueueSize/8) of them.
	QueueSize int
	// QueueBytes bounds the estimated size of the requests a channel's
	// queued jobs hold, exposed arguments included (default 32 MiB); one
	// subject may hold QueueBytes/8 of it.
	QueueBytes int64
	// Workers per channel (default 2).
	Workers int
}

// Hub fans kernel notifications out to channels. Each registered channel
// has its own bounded queue and workers, so a dead webhook cannot delay
// Slack. Within a channel each subject (the agent whose call is parked) has
// its own FIFO and a share of the queue (see queue.go), and the workers
// serve subjects in turn, so one agent's flood of parked calls drops only
// its own notifications and delays others' by at most one job per agent.
// Jobs of one request leave the queue in the order they were queued but,
// with several workers, may be delivered out of order (each carries the
// full request state, so receivers keep the latest by status and votes).
//
// Routing: a notification goes to every channel named in req.Channels that
// is registered on the hub, once per name. Names not registered are skipped
// silently: poll, terminal and dashboard need no push (they read the durable
// store or the event stream), and policy validation refuses a request naming
// webhook, slack or email unless that channel is configured.
type Hub struct {
	opts   HubOptions
	lanes  map[string]*lane
	ctx    context.Context // cancelled by Close: aborts attempts and backoffs
	cancel context.CancelFunc

	mu      sync.RWMutex // guards closed against Notify's sends
	closed  bool
	workers sync.WaitGroup

	// failures carries Notify-time drops to a goroutine that calls
	// OnFailure, so Notify itself never waits on the store.
	failures chan failure
	reporter sync.WaitGroup
}

type lane struct {
	ch       Channel
	name     string
	attempts int
	queue    *queue
}

type job struct {
	event   string
	req     *approval.Request
	telling *telling // nil for Notify; see NotifyThen
	id      string   // delivery id, stable across retries
	subject string   // req.SubjectID: whose share of the queue it takes
	bytes   int64    // jobBytes(req): what it takes of the byte budget
}

type failure struct{ approvalID, channel, msg string }

// failureBuffer bounds Notify-time drops awaiting OnFailure; beyond it a
// drop is only counted in the metric.
const failureBuffer = 1024

// NewHub starts the workers. Call Close to stop them.
func NewHub(opts HubOptions) *Hub {
	if opts.MaxAttempts < 1 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.QueueSize < 1 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.QueueBytes < 1 {
		opts.QueueBytes = DefaultQueueBytes
	}
	if opts.Workers < 1 {
		opts.Workers = DefaultWorkers
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
	}
	opts.Backoff = opts.Backoff.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		opts: opts, lanes: map[string]*lane{}, ctx: ctx, cancel: cancel,
		failures: make(chan failure, failureBuffer),
	}
	for _, c := range opts.Channels {
		if c == nil {
			panic("channels: nil Channel in HubOptions")
		}
		name := c.Name()
		if name == "" || h.lanes[name] != nil {
			panic(fmt.Sprintf("channels: empty or duplicate channel name %q", name))
		}
		l := &lane{ch: c, name: name, attempts: opts.MaxAttempts, queue: newQueue(opts.QueueSize, opts.QueueBytes)}
		if al, ok := c.(AttemptLimiter); ok && al.MaxAttempts() >= 1 {
			l.attempts = al.MaxAttempts()
		}
		h.lanes[name] = l
		for range opts.Workers {
			h.workers.Add(1)
			go h.work(l)
		}
	}
	h.reporter.Add(1)
	go func() {
		defer h.reporter.Done()
		for f := range h.failures {
			h.fail(f.approvalID, f.channel, f.msg)
		}
	}()
	return h
}

// Notify implements kernel.Notifier: one job per (event, channel named on
// the request and registered here). It never blocks: when a channel's queue
// is full, or the request's agent has used its share of it, the
// notification is dropped, counted as "failed" and recorded on the request
// asynchronously. The request itself is already durable, so it is never
// lost — only this push about it.
func (h *Hub) Notify(event string, req *approval.Request) {
	if req != nil {
		h.queue(event, req, nil)
	}
}

// NotifyThen implements kernel.TellingNotifier: Notify, then done once
// every job it queued has finished. done(true) when each was delivered or
// given up on after its attempts (recorded); done(false) when a queue
// refused one outright (full, or the agent's share of it taken: recorded
// too), so an agent flooding its own parked calls cannot have one counted
// as told that nobody was pushed. With no job at all, done(true) runs
// before NotifyThen returns. A job the hub dropped because it had closed —
// queued, mid-attempt or waiting to retry at Close, or raised after it —
// never finishes, so done is not called: the kernel leaves the request's
// tier untold, and the next start announces it again. The same holds when
// chiod dies with jobs queued, which is why the kernel waits for done
// rather than for Notify to return.
func (h *Hub) NotifyThen(event string, req *approval.Request, done func(told bool)) {
	if req == nil {
		return
	}
	t := &telling{done: done}
	t.left.Store(1) // NotifyThen's own, released once every job is queued
	if h.queue(event, req, t) {
		t.finish()
	}
}

// telling counts the jobs of one NotifyThen still to finish; the last to
// finish calls done, with whether none was refused.
type telling struct {
	left    atomic.Int32
	refused atomic.Bool
	done    func(told bool)
}

func (t *telling) hold() {
	if t != nil {
		t.left.Add(1)
	}
}

// finish ends one job (or NotifyThen's own hold).
func (t *telling) finish() {
	if t != nil && t.left.Add(-1) == 0 {
		t.done(!t.refused.Load())
	}
}

// refuse ends a job its queue refused.
func (t *telling) refuse() {
	if t != nil {
		t.refused.Store(true)
		t.finish()
	}
}

// queue pushes one job per channel named on req, each holding t; it
// reports false when the hub had closed, so the notification was cut off.
func (h *Hub) queue(event string, req *approval.Request, t *telling) (open bool) {
	size := jobBytes(req) // the same request in every channel's queue
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i, name := range req.Channels {
		l := h.lanes[name]
		if l == nil || slices.Contains(req.Channels[:i], name) {
			continue
		}
		if h.closed { // shutting down: nothing can record it any more
			h.metric(name, ResultFailed)
			continue
		}
		j := job{event: event, req: req, telling: t, subject: req.SubjectID, bytes: size}
		if id, err := uuid.NewV7(); err == nil {
			j.id = id.String()
		}
		t.hold()
		if refused := l.queue.push(j); refused != "" {
			h.metric(name, ResultFailed)
			msg := event + " not delivered: " + refused + " (the request stays on the dashboard and GET /approvals/pending)"
			select {
			case h.failures <- failure{req.ApprovalID, name, msg}:
			default: // reporter saturated too; the metric above still counts it
			}
			t.refuse() // never the last: NotifyThen holds one
		}
	}
	return !h.closed
}

// Close stops the workers: in-flight attempts are cancelled through their
// ctx, pending retries and queued jobs are abandoned, each recorded through
// OnFailure. It waits for that to finish. Notify after Close only counts
// "failed". Close is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.cancel()
	h.mu.Unlock()

	h.workers.Wait()
	for _, l := range h.lanes {
		for _, j := range l.queue.drain() {
			h.abandon(l, j, j.event+" not delivered: hub closed")
		}
	}
	close(h.failures) // no sender is left: Notify checks closed under mu
	h.reporter.Wait()
}

func (h *Hub) work(l *lane) {
	defer h.workers.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-l.queue.ready:
			if j, ok := l.queue.pop(); ok { // always, by ready's invariant
				h.run(l, j)
			}
		}
	}
}

// run delivers one job: attempts with backoff until success, a permanent
// error, the attempt budget, or Close.
func (h *Hub) run(l *lane, j job) {
	ctx := WithDeliveryID(h.ctx, j.id)
	var err error
	for n := 1; ; n++ {
		if h.ctx.Err() != nil {
			msg := j.event + " not delivered: hub closed"
			if n > 1 {
				msg = fmt.Sprintf("%s abandoned at shutdown after %d attempt(s): %v", j.event, n-1, err)
			}
			h.abandon(l, j, msg)
			return
		}
		if err = h.attempt(ctx, l, j); err == nil {
			h.metric(l.name, ResultOK)
			j.telling.finish()
			return
		}
		switch {
		case h.ctx.Err() != nil:
			continue // reported as abandoned at the top of the loop
		case errors.Is(err, ErrPermanent), n >= l.attempts:
			h.giveUp(l, j, fmt.Sprintf("%s not delivered after %d attempt(s): %v", j.event, n, err))
			return
		}
		h.metric(l.name, ResultRetry)
		t := time.NewTimer(h.opts.Backoff.Delay(n))
		select {
		case <-t.C:
		case <-h.ctx.Done():
			t.Stop()
		}
	}
}

// attempt is one Deliver call, bounded by AttemptTimeout; a panicking
// channel is a failed attempt, never a crashed daemon.
func (h *Hub) attempt(ctx context.Context, l *lane, j job) (err error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.AttemptTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("channel %s panicked: %v", l.name, r)
		}
	}()
	return l.ch.Deliver(ctx, j.event, j.req)
}

// giveUp records that j failed for good; j has finished.
func (h *Hub) giveUp(l *lane, j job, msg string) {
	h.drop(l, j, msg)
	j.telling.finish()
}

// abandon gives up on j because the hub closed: recorded, but j never
// finishes, so its request is not marked told (NotifyThen).
func (h *Hub) abandon(l *lane, j job, msg string) {
	h.drop(l, j, msg)
}

func (h *Hub) drop(l *lane, j job, msg string) {
	h.metric(l.name, ResultFailed)
	h.fail(j.req.ApprovalID, l.name, msg)
}

func (h *Hub) fail(approvalID, channel, msg string) {
	if h.opts.OnFailure != nil {
		h.opts.OnFailure(approvalID, channel, msg)
	}
}

func (h *Hub) metric(channel, result string) {
	if h.opts.Metric != nil {
		h.opts.Metric(channel, result)
	}
}
