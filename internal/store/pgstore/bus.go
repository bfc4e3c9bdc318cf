package pgstore

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// notifyChannel is the one LISTEN/NOTIFY channel replicas share. Payloads:
//
//	log:<seq>        a commit made the log's head <seq> (sent inside the
//	                 committing transaction, so delivered when it commits)
//	ev:<JSON array>  events that happened on one replica, as references
//	up:<id>          a replica started: relay events again, someone listens
const notifyChannel = "chio"

// Bus relays kernel events between replicas (kernel.EventRelay). A NOTIFY
// payload is limited to 8000 bytes and an approval can be far larger, so
// only references travel — the event's type and the approval or request
// id — and a receiving replica reads the state from the database, which
// is at least as new as the event (the event is sent after its commit;
// it may be newer — a request already resolved — and its own event then
// follows). A replica with no subscriber reads nothing.
type Bus struct {
	s         *Store
	listening chan struct{} // closed once LISTEN first holds
	out       chan eventRef
	mu        sync.Mutex
	sub       Subscriber
	dropped   atomic.Int64
	stop      chan struct{}
	done      chan struct{}
}

// Subscriber receives events relayed from other replicas; *kernel.Kernel
// is one.
type Subscriber interface {
	PublishRemote(kernel.Event)
	ResetSubscribers()
	HasSubscribers() bool
}

var _ kernel.EventRelay = (*Bus)(nil)

type eventRef struct {
	Origin   string `json:"o"`
	Type     string `json:"t"`
	Approval string `json:"a,omitempty"`
	Request  string `json:"c,omitempty"`
}

func newBus(s *Store) *Bus {
	b := &Bus{s: s, listening: make(chan struct{}), out: make(chan eventRef, RelayQueue), stop: make(chan struct{}), done: make(chan struct{})}
	go b.send()
	return b
}

// Events is the store's event relay: pass it as kernel.Config.Relay, then
// Attach the kernel.
func (s *Store) Events() *Bus { return s.bus }

// Attach makes sub receive the events of other replicas.
func (b *Bus) Attach(sub Subscriber) {
	b.mu.Lock()
	b.sub = sub
	b.mu.Unlock()
}

func (b *Bus) subscriber() Subscriber {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sub
}

// Dropped reports events that could not be relayed (the queue was full).
func (b *Bus) Dropped() int64 { return b.dropped.Load() }

// Relay implements kernel.EventRelay. It never blocks: a full queue drops
// the event (counted), and the other replicas' waiters learn the state
// when their wait ends.
func (b *Bus) Relay(e kernel.Event) {
	r := eventRef{Origin: b.s.id, Type: e.Type}
	switch {
	case e.Approval != nil:
		r.Approval = e.Approval.ApprovalID
	case e.Call != nil:
		r.Request = e.Call.RequestID
	default:
		return
	}
	select {
	case b.out <- r:
	default:
		b.dropped.Add(1)
	}
}

// send batches queued references into NOTIFYs, each under the payload
// limit, committed without waiting for an fsync (an event is a wake-up;
// its state is already durable).
func (b *Bus) send() {
	defer close(b.done)
	for {
		var first eventRef
		select {
		case first = <-b.out:
		case <-b.stop:
			b.flush(b.pending())
			return
		}
		// Linger a moment so that one NOTIFY carries many events (each is
		// a transaction in PostgreSQL); a wake-up a few ms late is fine.
		select {
		case <-time.After(RelayLinger):
		case <-b.stop:
		}
		refs := append([]eventRef{first}, b.pending()...)
		if b.s.alone.Load() {
			continue // no other replica is alive to tell
		}
		b.flush(refs)
	}
}

// pending takes what is queued now, without waiting.
func (b *Bus) pending() []eventRef {
	var refs []eventRef
	for len(refs) < 4096 {
		select {
		case r := <-b.out:
			refs = append(refs, r)
		default:
			return refs
		}
	}
	return refs
}

func (b *Bus) flush(refs []eventRef) {
	for len(refs) > 0 {
		var payload []byte
		n := 0
		for n < len(refs) {
			one, _ := json.Marshal(refs[n])
			if len(payload)+len(one)+8 > MaxNotifyPayload && n > 0 {
				break
			}
			if n == 0 {
				payload = append([]byte("ev:["), one...)
			} else {
				payload = append(append(payload, ','), one...)
			}
			n++
		}
		payload = append(payload, ']')
		refs = refs[n:]
		if len(payload) > MaxNotifyPayload {
			b.dropped.Add(1) // ids are bounded; this does not happen
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		batch := &pgx.Batch{}
		batch.Queue("BEGIN")
		batch.Queue("SELECT set_config('synchronous_commit', 'off', true)")
		batch.Queue("SELECT pg_notify($1, $2)", notifyChannel, string(payload))
		batch.Queue("COMMIT")
		err := b.s.pool.SendBatch(ctx, batch).Close()
		cancel()
		if err != nil {
			b.dropped.Add(int64(n))
			slog.Warn("relaying events to other replicas failed", "events", n, "err", err)
		}
	}
}

func (b *Bus) close() {
	close(b.stop)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
	}
}

// listen holds a dedicated connection LISTENing on notifyChannel until the
// store closes, reconnecting after failures. After a reconnect it catches
// the log up and resets the kernel's subscribers: events sent while it was
// away are lost, and subscribers re-read what they wait for.
func (s *Store) listenLoop(b *Bus) {
	defer s.bgWG.Done()
	backoff := 100 * time.Millisecond
	first := true
	for s.bg.Err() == nil {
		err := s.listenOnce(b, func() {
			backoff = 100 * time.Millisecond
			if first {
				close(b.listening)
			} else {
				if sub := b.subscriber(); sub != nil {
					sub.ResetSubscribers()
				}
				s.follow(0)
			}
			first = false
		})
		if s.bg.Err() != nil {
			return
		}
		slog.Warn("replica notifications: connection lost; reconnecting", "err", err, "in", backoff)
		select {
		case <-s.bg.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (b *Bus) listen() { b.s.listenLoop(b) }

func (s *Store) listenOnce(b *Bus, connected func()) error {
	conn, err := pgx.ConnectConfig(s.bg, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(s.bg, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(s.bg)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(n.Payload, "log:"):
			if seq, err := strconv.ParseUint(n.Payload[4:], 10, 64); err == nil {
				s.follow(seq)
			}
		case strings.HasPrefix(n.Payload, "up:"):
			if n.Payload[3:] != s.id {
				s.alone.Store(false)
			}
		case strings.HasPrefix(n.Payload, "ev:"):
			var refs []eventRef
			if json.Unmarshal([]byte(n.Payload[3:]), &refs) == nil {
				b.deliver(refs)
			}
		}
	}
}

// deliver publishes other replicas' events to this replica's subscribers,
// reading each one's state from the database.
func (b *Bus) deliver(refs []eventRef) {
	sub := b.subscriber()
	if sub == nil || !sub.HasSubscribers() {
		return
	}
	var approvals, calls []string
	for _, r := range refs {
		if r.Origin == b.s.id {
			continue
		}
		if r.Approval != "" {
			approvals = append(approvals, r.Approval)
		} else if r.Request != "" {
			calls = append(calls, r.Request)
		}
	}
	if len(approvals)+len(calls) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(b.s.bg, ReadTimeout)
	defer cancel()
	reqs := map[string]*approval.Request{}
	recs := map[string]*kernel.CallRecord{}
	if err := b.s.readMany(ctx, "SELECT approval_id, req FROM chio_approvals WHERE approval_id = ANY($1)", approvals, func(id string, raw []byte) error {
		r, err := decodeApproval(id, raw)
		reqs[id] = r
		return err
	}); err != nil {
		slog.Warn("relayed events: reading approvals failed; their subscribers are reset", "err", err)
		sub.ResetSubscribers()
		return
	}
	if err := b.s.readMany(ctx, "SELECT request_id, rec FROM chio_calls WHERE request_id = ANY($1)", calls, func(id string, raw []byte) error {
		c, err := decodeCall(id, raw)
		recs[id] = c
		return err
	}); err != nil {
		slog.Warn("relayed events: reading calls failed; their subscribers are reset", "err", err)
		sub.ResetSubscribers()
		return
	}
	for _, r := range refs {
		if r.Origin == b.s.id {
			continue
		}
		if req, ok := reqs[r.Approval]; ok && r.Approval != "" {
			sub.PublishRemote(kernel.Event{Type: r.Type, Approval: req})
		} else if rec, ok := recs[r.Request]; ok && r.Request != "" {
			sub.PublishRemote(kernel.Event{Type: r.Type, Call: kernel.OutcomeOf(rec)})
		}
	}
}

// readMany runs a query over ids returning (id, bytes) rows.
func (s *Store) readMany(ctx context.Context, sql string, ids []string, fn func(string, []byte) error) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, sql, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return err
		}
		if err := fn(id, raw); err != nil {
			return err
		}
	}
	return rows.Err()
}
