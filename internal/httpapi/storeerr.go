package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// A store's own error is never served. It says why a read or a commit
// failed in the store's words: for PostgreSQL pgx names the host, user
// and database, for bbolt the data file's path. Several routes answer
// callers who hold no credential yet (a made-up Chio-Proof on GET
// /v1/calls/{id} or GET /approvals/{id}, a stranger's token on POST
// /approvals/{id}/respond) and read the store before they can check it.
// So an error that is the store's being unavailable (kernel.ErrUnavailable)
// is answered 503 unavailable, "store unavailable", and its cause goes to
// the log, as GET /readyz's does. A vote recorded or uncertain and an
// outcome unknown keep their own codes and messages (classify's earlier
// cases), but not the store's words inside them either: only an
// authenticated agent or approver reaches them, and the agent is the party
// chio guards against (WithoutStoreWords).

// errStoreUnavailable is the message every such answer carries.
const errStoreUnavailable = "store unavailable; try again later (chiod's log has the cause)"

// storeUnavailable is err's answer; its cause is logged when it is written
// (logCause), not here: classify may run more than once for one answer.
func storeUnavailable(err error) *APIError {
	ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable, errStoreUnavailable)
	ae.cause = err
	return ae
}

// logCause logs the store error an answer keeps from its client, at most
// once a second (causeLog).
func logCause(ae *APIError) {
	if ae.cause == nil {
		return
	}
	if left, ok := causes.take(time.Now()); ok {
		slog.Warn("answered "+ae.Code+": "+kernel.ErrUnavailable.Error(), "err", ae.cause.Error(), "left_out_since_last", left)
	}
}

// causeLog throttles logCause. While the store is down every request
// fails with its error, and some routes read the store before they check
// any credential: logged once per request, anyone could write chiod's log
// as fast as they could send requests, for as long as the outage lasted.
// The first cause in each second is logged, with how many were left out
// since the last one logged (GET /readyz and /metrics say the store is
// down meanwhile).
type causeLog struct {
	mu   sync.Mutex
	last time.Time
	left int
}

var causes causeLog

// take reports whether a cause seen at now is logged, and how many were
// left out before it.
func (c *causeLog) take(now time.Time) (left int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.last.IsZero() && now.Sub(c.last) < time.Second {
		c.left++
		return 0, false
	}
	left, c.left, c.last = c.left, 0, now
	return left, true
}

// WithoutStoreWords is err's message with the store's own error inside it
// (the outermost part of err that is kernel.ErrUnavailable and not one of
// the kernel's answers around it) said as "store unavailable (chiod's log
// has the cause)"; it returns that part as the cause to log, or nil when
// err holds none.
func WithoutStoreWords(err error) (string, error) {
	msg := err.Error()
	part := storePart(err)
	if part == nil {
		return msg, nil
	}
	return strings.ReplaceAll(msg, part.Error(), "store unavailable (chiod's log has the cause)"), part
}

// storePart finds, breadth first, the outermost error in err's tree that
// is the store's being unavailable, and not the kernel's outcome or vote
// answer wrapping it.
func storePart(err error) error {
	queue := []error{err}
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if e == nil || e == kernel.ErrUnavailable {
			continue
		}
		if errors.Is(e, kernel.ErrUnavailable) && !errors.Is(e, kernel.ErrOutcomeUnknown) &&
			!errors.Is(e, kernel.ErrVoteRecorded) && !errors.Is(e, kernel.ErrVoteUncertain) {
			return e
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			queue = append(queue, u.Unwrap())
		case interface{ Unwrap() []error }:
			queue = append(queue, u.Unwrap()...)
		}
	}
	return nil
}

// answerWithoutStoreWords is classify's answer for an error that keeps its
// own code: its message loses the store's words, which go to the log.
func answerWithoutStoreWords(status int, code string, err error) *APIError {
	msg, cause := WithoutStoreWords(err)
	ae := apiErr(status, code, msg)
	if cause != nil {
		ae.cause = cause
	}
	return ae
}
