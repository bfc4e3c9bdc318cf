package kernel

import (
	"sync"

	"github.com/chiokernel/chio/approval"
)

// Event types published to subscribers (the SSE stream, long-pollers).
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalEscalated = "approval.escalated"
	EventApprovalResolved  = "approval.resolved"
	EventCallCompleted     = "call.completed"
)

// MaxSubscribers bounds concurrent event subscribers (SSE clients, waiters).
const MaxSubscribers = 4096

// Event is one lifecycle change. Approval is a snapshot, never shared.
type Event struct {
	Type     string            `json:"type"`
	Approval *approval.Request `json:"approval,omitempty"`
	Call     *Outcome          `json:"call,omitempty"`
}

// broker fans events out. A subscriber that falls behind by more than its
// buffer is closed (it reconnects and re-reads state) rather than slowing
// decisions down.
type broker struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

func newBroker() *broker { return &broker{subs: map[chan Event]struct{}{}} }

// Subscribe returns a channel of events and a cancel function. It fails
// (ok=false) when MaxSubscribers are already listening.
func (k *Kernel) Subscribe() (events <-chan Event, cancel func(), ok bool) {
	b := k.events
	ch := make(chan Event, 256)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.subs) >= MaxSubscribers {
		return nil, func() {}, false
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}, true
}

func (b *broker) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}
