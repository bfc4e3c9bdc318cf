package httpapi

// GET /approvals/stream: Server-Sent Events for live views (the dashboard,
// chio approval watch). Whatever a client does — open many streams, never
// read them — what chiod holds for it is bounded: a slot per stream (per
// credential and in total), a replay bounded in count and bytes, events
// shared with every other stream, and one frame in flight, for at most
// StreamWriteTimeout.
//
// A stream lives no longer than what let it open. A bearer token is fixed
// for the process's life. An approver session is re-checked before every
// frame (live, unexpired, and the key still an approver in the policy in
// force), and the stream ends at once when the session ends (logout,
// eviction, a reload that removed its key: PolicyReloaded) or reaches its
// expiry on the kernel's clock. So an approver removed from the policy
// gets no frame after the reload, and loses the stream when chiod calls
// PolicyReloaded, right after it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// EventStreamTruncated tells a client that the replay of pending requests
// stopped at its limits: more are pending than the stream replayed, and
// GET /approvals/pending lists them.
const EventStreamTruncated = "stream.truncated"

// StreamTruncated is the data of a stream.truncated event.
type StreamTruncated struct {
	Type           string `json:"type"`
	Replayed       int    `json:"replayed"`
	MaxReplay      int    `json:"max_replay"`
	MaxReplayBytes int    `json:"max_replay_bytes"`
	Message        string `json:"message"`
}

// streamApprovals serves Server-Sent Events. It subscribes first and then
// replays the pending requests, so a (re)connecting client misses nothing;
// an event in between may arrive twice, and clients key on approval_id.
func (s *Server) streamApprovals(w http.ResponseWriter, r *http.Request) {
	if !noQuery(w, r) {
		return
	}
	g, ok := s.streamGrantOf(r)
	if !ok {
		// The session ended between requireRole and here.
		if s.signedOutEverywhere(r) {
			writeErr(w, errSignedOutEverywhere)
			return
		}
		writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "a valid bearer token or approver session is required"))
		return
	}
	cred, share := g.cred, g.share
	if !s.streams.acquire(cred, share) {
		s.cfg.Metrics.streamsRefused.WithLabelValues(refusedCredential).Inc()
		refuseStream(w, http.StatusTooManyRequests, fmt.Sprintf("this credential already has %d open event streams; close one or retry later", share))
		return
	}
	defer s.streams.release(cred)
	// A session's expiry ends the stream, on the kernel's clock.
	expired := make(chan struct{})
	if g.session != "" {
		t := s.cfg.Kernel.Clock().AfterFuncAt(g.expiresAt, func() { close(expired) })
		defer t.Stop()
	}
	events, cancel, ok := s.cfg.Kernel.Subscribe(kernel.PoolStream)
	if !ok {
		s.cfg.Metrics.streamsRefused.WithLabelValues(refusedGlobal).Inc()
		refuseStream(w, http.StatusServiceUnavailable, "too many event streams are open; retry later")
		return
	}
	defer cancel()
	replay, truncated, err := s.replay()
	if err != nil {
		writeErr(w, err)
		return
	}
	if s.shuttingDown() {
		// The stream would end at once: a 200 that ends is read as a
		// stream given and reconnected at once, here. 503 says this chiod
		// will not serve it (the dashboard backs off, chio approval watch
		// prints this and backs off).
		writeErr(w, apiErr(http.StatusServiceUnavailable, CodeUnavailable,
			"chiod is shutting down; connect again once it is back up, or to another replica"))
		return
	}
	sw := startSSE(w, s.cfg.StreamWriteTimeout)
	// A deadline left on the connection would cut the next request on it.
	defer sw.rc.SetWriteDeadline(time.Time{})
	if !sw.write([]byte("retry: 2000\n\n")) {
		return
	}
	for i := range replay {
		ok := s.streamAllowed(g) && sw.event(kernel.EventApprovalRequested, replay[i])
		replay[i] = nil // sent: no longer this stream's to hold
		if !ok {
			return
		}
	}
	if truncated {
		data, _ := json.Marshal(StreamTruncated{Type: EventStreamTruncated, Replayed: len(replay),
			MaxReplay: MaxStreamReplay, MaxReplayBytes: MaxStreamReplayBytes,
			Message: fmt.Sprintf("more requests are pending than the %d replayed; GET /approvals/pending lists them", len(replay))})
		if !s.streamAllowed(g) || !sw.event(EventStreamTruncated, data) {
			return
		}
	}
	keepalive := time.NewTicker(StreamKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case e, open := <-events:
			// A closed channel means the kernel dropped us for falling behind:
			// end the stream, the client reconnects and gets a fresh replay.
			if !open {
				return
			}
			if !s.streamAllowed(g) {
				return
			}
			data, err := e.JSON()
			if err != nil || !sw.event(e.Type, data) {
				return
			}
		case <-keepalive.C:
			if !s.streamAllowed(g) || !sw.write([]byte(": keepalive\n\n")) {
				return
			}
		case <-g.ended: // logout, eviction, or a reload that removed the key
			return
		case <-expired:
			return
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// streamGrant is what let a stream open: the credential it counts against
// and its share, and for an approver session, the session to re-check.
type streamGrant struct {
	cred      string
	share     int
	session   string        // session id; "" for a bearer token
	ended     chan struct{} // closed when the session ends; nil (never) for a token
	expiresAt time.Time     // the session's expiry
}

// streamGrantOf names what a stream counts against, and its share. Each
// bearer token is one credential; an approver is one however many sessions
// they open. (requireRole has already checked the credential; a session
// that ended since is refused here.)
func (s *Server) streamGrantOf(r *http.Request) (streamGrant, bool) {
	if r.Header.Get("Authorization") != "" {
		if s.tokenRole(r) == roleAdmin {
			return streamGrant{cred: "token:admin", share: MaxStreamsPerToken}, true
		}
		return streamGrant{cred: "token:reader", share: MaxStreamsPerToken}, true
	}
	id, sess, ok := s.session(r)
	if !ok {
		return streamGrant{}, false
	}
	return streamGrant{cred: "approver:" + sess.approver, share: MaxStreamsPerApprover,
		session: id, ended: sess.ended, expiresAt: sess.expiresAt}, true
}

// streamAllowed re-checks a stream's grant before a frame: a session must
// still be live and its key still an approver (tokens do not change while
// chiod runs).
func (s *Server) streamAllowed(g streamGrant) bool {
	if g.session == "" {
		return true
	}
	_, ok := s.sessionByID(g.session)
	return ok
}

func refuseStream(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(StreamRetryAfter/time.Second)))
	writeErr(w, apiErr(status, CodeUnavailable, msg))
}

// replay encodes the pending requests a new stream starts from: oldest
// first, at most MaxStreamReplay of them and MaxStreamReplayBytes of
// encoded events (the oldest is always sent). truncated reports that more
// are pending. Requests are decoded one at a time and only their encoding
// is kept, so a replay costs its bytes and no more.
func (s *Server) replay() (frames [][]byte, truncated bool, err error) {
	var used int
	var encErr error
	err = s.cfg.Store.View(func(tx kernel.ReadTx) error {
		return tx.PendingApprovals(func(req *approval.Request) bool {
			if len(frames) == MaxStreamReplay {
				truncated = true
				return false
			}
			data, err := kernel.Event{Type: kernel.EventApprovalRequested, Approval: req}.JSON()
			if err != nil {
				encErr = err
				return false
			}
			if len(frames) > 0 && used+len(data) > MaxStreamReplayBytes {
				truncated = true
				return false
			}
			frames, used = append(frames, data), used+len(data)
			return true
		})
	})
	if err == nil {
		err = encErr
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: reading pending requests for the stream: %v", kernel.ErrUnavailable, err)
	}
	return frames, truncated, nil
}

// sseWriter writes SSE frames, each under its own write deadline, and
// flushes them. Any error means the client is gone or too slow: the caller
// ends the stream.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	seq     uint64
}

func startSSE(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write sends raw bytes and flushes them, under a deadline that it clears
// afterwards: over HTTP/2 a deadline left set resets the stream when it
// passes even with nothing being written, so a stream quiet for longer
// than the timeout (keepalives come every StreamKeepalive) would be cut.
// The deadline is transport time, not decision time: it uses the real
// clock.
func (sw *sseWriter) write(parts ...[]byte) bool {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	defer sw.rc.SetWriteDeadline(time.Time{})
	for _, p := range parts {
		// A large payload goes straight to the connection: the shared
		// encoding is never copied per stream.
		if _, err := sw.w.Write(p); err != nil {
			return false
		}
	}
	return sw.rc.Flush() == nil
}

// event sends one numbered event. data is one line of JSON; a newline in
// it would let a payload forge SSE fields, so such a frame ends the stream
// (encoding/json never writes one).
func (sw *sseWriter) event(typ string, data []byte) bool {
	if bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0 {
		return false
	}
	sw.seq++
	head := make([]byte, 0, 64)
	head = append(head, "id: "...)
	head = strconv.AppendUint(head, sw.seq, 10)
	head = append(head, "\nevent: "...)
	head = append(head, typ...)
	head = append(head, "\ndata: "...)
	return sw.write(head, data, []byte("\n\n"))
}
