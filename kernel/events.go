package kernel

import (
	"sync"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/jsonexact"
)

// Event types published to subscribers (the SSE stream, long-pollers).
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalEscalated = "approval.escalated"
	EventApprovalResolved  = "approval.resolved"
	EventCallCompleted     = "call.completed"
)

// Event is one lifecycle change. Approval is a snapshot the kernel no
// longer modifies; one publish hands the same snapshot to every subscriber,
// and none may modify it either.
type Event struct {
	Type     string            `json:"type"`
	Approval *approval.Request `json:"approval,omitempty"`
	Call     *Outcome          `json:"call,omitempty"`

	// wire is the event's JSON, encoded at most once per publish and shared
	// by every subscriber's copy of the event (see JSON).
	wire *wireOnce
}

// MayEnd reports whether e may have ended the call requestID (parked
// under approvalID, "" for none): its completion, or the resolution of
// its approval. Both are published only after the state they announce is
// durable; a waiter re-reads the call to learn what became of it.
func (e Event) MayEnd(requestID, approvalID string) bool {
	switch e.Type {
	case EventCallCompleted:
		return e.Call != nil && e.Call.RequestID == requestID
	case EventApprovalResolved:
		return e.Approval != nil && approvalID != "" && e.Approval.ApprovalID == approvalID
	}
	return false
}

type wireOnce struct {
	once sync.Once
	data []byte
	err  error
}

// liveCall is what live views learn of a finished call: how it ended, not
// what the tool returned. The output (up to MaxToolOutputBytes) belongs to
// the call's agent and to token holders (GET /v1/calls/{id}); approver
// sessions read the stream and must never see it.
type liveCall struct {
	Status            string `json:"status"`
	RequestID         string `json:"request_id"`
	ReceiptID         string `json:"receipt_id"`
	Reason            string `json:"reason,omitempty"`
	Guard             string `json:"guard,omitempty"`
	ApprovalRequestID string `json:"approval_request_id,omitempty"`
}

// JSON is the event as live views (the SSE stream) receive it, with a
// completed call's output and tool error left out. An event that came from
// a publish is encoded once, however many streams send it: a thousand
// streams cost one encoding and hold one copy of the bytes. The returned
// slice is shared and must not be modified.
func (e Event) JSON() ([]byte, error) {
	if e.wire == nil {
		return e.encode()
	}
	e.wire.once.Do(func() { e.wire.data, e.wire.err = e.encode() })
	return e.wire.data, e.wire.err
}

func (e Event) encode() ([]byte, error) {
	v := struct {
		Type     string            `json:"type"`
		Approval *approval.Request `json:"approval,omitempty"`
		Call     *liveCall         `json:"call,omitempty"`
	}{Type: e.Type, Approval: e.Approval}
	if c := e.Call; c != nil {
		v.Call = &liveCall{Status: c.Status, RequestID: c.RequestID, ReceiptID: c.ReceiptID,
			Reason: c.Reason, Guard: c.Guard, ApprovalRequestID: c.ApprovalRequestID}
	}
	// One line: JSON escapes newlines inside strings. Verbatim: approvers
	// following the stream (the dashboard, `chio approval watch`) read the
	// arguments as the tool receives them.
	return jsonexact.Marshal(v)
}

// Pool is a class of subscribers with its own cap and buffer, so that a
// flood of one class (dashboards, SSE clients) can never take the slots of
// another (agents long-polling for their call).
type Pool int

const (
	// PoolStream is for live views: the SSE stream.
	PoolStream Pool = iota
	// PoolWait is for long-polls: GET /v1/calls/{id}?wait=, chio await.
	PoolWait
	poolCount
)

// poolLimits are each pool's cap and per-subscriber buffer (limits.go).
var poolLimits = [poolCount]struct{ max, buffer int }{
	PoolStream: {MaxStreamSubscribers, StreamBuffer},
	PoolWait:   {MaxWaitSubscribers, WaitBuffer},
}

// broker fans events out. A subscriber that falls behind by more than its
// buffer is dropped (its channel is emptied and closed; it reconnects and
// re-reads state) rather than slowing decisions down or holding events.
//
// Memory: a buffer holds Event values that point at one shared snapshot
// and one shared encoding per publish. A subscriber's unread events are
// always the latest ones published, so all buffers together pin at most
// the last max(buffer) events, whatever the number of subscribers.
type broker struct {
	mu    sync.Mutex
	pools [poolCount]map[chan Event]struct{}
	relay EventRelay // other replicas (bus.go); nil when the store is ours alone
}

func newBroker() *broker {
	b := &broker{}
	for i := range b.pools {
		b.pools[i] = map[chan Event]struct{}{}
	}
	return b
}

// Subscribe returns a channel of events from pool and a cancel function.
// It fails (ok=false) when the pool is full. The channel is closed when
// the subscriber is dropped for falling behind, or by cancel.
func (k *Kernel) Subscribe(pool Pool) (events <-chan Event, cancel func(), ok bool) {
	if pool < 0 || pool >= poolCount {
		return nil, func() {}, false
	}
	b := k.events
	lim := poolLimits[pool]
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := b.pools[pool]
	if len(subs) >= lim.max {
		return nil, func() {}, false
	}
	ch := make(chan Event, lim.buffer)
	subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := subs[ch]; ok {
			delete(subs, ch)
			close(ch)
		}
	}, true
}

// Subscribers reports the current number of subscribers in pool.
func (k *Kernel) Subscribers(pool Pool) int {
	if pool < 0 || pool >= poolCount {
		return 0
	}
	k.events.mu.Lock()
	defer k.events.mu.Unlock()
	return len(k.events.pools[pool])
}

func (b *broker) publish(e Event) {
	b.publishLocal(e)
	if b.relay != nil {
		b.relay.Relay(e)
	}
}

func (b *broker) publishLocal(e Event) {
	e.wire = &wireOnce{}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, subs := range b.pools {
		for ch := range subs {
			select {
			case ch <- e:
			default:
				delete(subs, ch)
				drain(ch)
				close(ch)
			}
		}
	}
}

// drain empties a dropped subscriber's buffer so the events it held are
// released now, not when its reader gets round to them.
func drain(ch chan Event) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
