package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// storeDownDetail is what a PostgreSQL store's failed read says (pgx names
// the host, user and database; pgstore wraps it as readTx.wrap does).
const storeDownDetail = "failed to connect to `host=db.internal user=chio database=chio_prod`: dial error: connection refused"

// readsDownStore fails every read and update once down, with the store's
// own error wrapped as pgstore wraps it.
type readsDownStore struct {
	kernel.Store
	down        atomic.Bool
	updatesDown atomic.Bool // only commits fail
}

func (s *readsDownStore) wrap(inner kernel.Store) kernel.Store { s.Store = inner; return s }

func (s *readsDownStore) err() error {
	return fmt.Errorf("%w: %v", kernel.ErrUnavailable, storeDownDetail)
}

func (s *readsDownStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return s.err()
	}
	return s.Store.View(fn)
}

func (s *readsDownStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.down.Load() || s.updatesDown.Load() {
		return s.err()
	}
	return s.Store.Update(ctx, fn)
}

// GET /readyz keeps a failed store's own error (which for PostgreSQL names
// the host, user and database) from callers without a credential. The
// routes anyone may call with a made-up Chio-Proof or approval token read
// the store before they can check either, and answered the store's error
// as is: an anonymous caller learnt the database's host, user and name.
// They must say only that the store is unavailable (503).
func TestAnonymousCallersNeverSeeTheStoresError(t *testing.T) {
	st := &readsDownStore{}
	f := newApprovalsFixtureOn(t, st.wrap)
	out := f.pendingRefund(t)
	stranger := f.token(t, keyOther, out.ApprovalRequestID, approval.DecisionApproved, nil)
	junkProof := map[string]string{"Chio-Proof": "1800000000.00"}
	st.down.Store(true)
	for _, c := range []struct{ name, method, path, body string }{
		{"call status", "GET", "/v1/calls/" + out.RequestID, ""},
		{"approval", "GET", "/approvals/" + out.ApprovalRequestID, ""},
		{"respond", "POST", "/approvals/" + out.ApprovalRequestID + "/respond", respondBody(stranger, "")},
		{"cancel", "POST", "/approvals/" + out.ApprovalRequestID + "/cancel", `{"reason":"x"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := f.do(t, c.method, c.path, c.body, junkProof)
			msg := fmt.Sprint(body["message"])
			for _, leak := range []string{"db.internal", "user=", "chio_prod"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("an anonymous caller is told %q: %d %v", leak, code, body)
				}
			}
			if code != http.StatusServiceUnavailable && code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Fatalf("store down: %d %v", code, body)
			}
		})
	}
}

// The answers only an authenticated agent or approver reaches keep their
// own codes when a commit fails (outcome_unknown: the call may have run;
// vote_uncertain: the vote may have counted), and used to carry the
// store's error inside their message: an agent — the party chio guards
// against — learnt the database's host, user and name from a failed
// commit. They must say what happened without the store's words.
func TestAuthenticatedCallersNeverSeeTheStoresError(t *testing.T) {
	st := &readsDownStore{}
	f := newApprovalsFixtureOn(t, st.wrap)
	out := f.pendingRefund(t)
	vote := f.token(t, keyAlice, out.ApprovalRequestID, approval.DecisionApproved, nil)
	call := f.w.CallAs(t, keyAgent, f.caps[keyAgent.Public().String()], "pay", "echo", `{"x":1}`, "")
	callBody, _ := json.Marshal(call)
	st.updatesDown.Store(true)
	for _, c := range []struct{ name, path, body, code string }{
		{"agent's call", "/v1/calls", string(callBody), "outcome_unknown"},
		{"approver's vote", "/approvals/" + out.ApprovalRequestID + "/respond", respondBody(vote, ""), "vote_uncertain"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := f.do(t, "POST", c.path, c.body, nil)
			msg := fmt.Sprint(body["message"])
			if body["error"] != c.code {
				t.Fatalf("commit failed: %d %v; want %s", status, body, c.code)
			}
			for _, leak := range []string{"db.internal", "user=", "chio_prod"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("an authenticated caller is told the store's %q: %d %v", leak, status, body)
				}
			}
			if !strings.Contains(msg, "store unavailable") {
				t.Fatalf("the message no longer says the store failed: %q", msg)
			}
		})
	}
}

// While the store is down every request fails with its error, which is
// logged, not served. Logged once per request, anyone — with no credential
// (a made-up Chio-Proof) — could write chiod's log as fast as they could
// send requests, for as long as the outage lasted. The cause is logged at
// most once a second, with a count of those left out.
func TestStoreErrorsAreNotLoggedOncePerRequest(t *testing.T) {
	st := &readsDownStore{}
	f := newApprovalsFixtureOn(t, st.wrap)
	out := f.pendingRefund(t)
	var logged syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	st.down.Store(true)
	start := time.Now()
	const requests = 300
	for range requests {
		if code, _ := f.do(t, "GET", "/v1/calls/"+out.RequestID, "", map[string]string{"Chio-Proof": "1800000000.00"}); code != http.StatusServiceUnavailable {
			t.Fatalf("store down: %d", code)
		}
	}
	elapsed := time.Since(start)
	lines := strings.Count(logged.String(), "db.internal")
	if lines > int(elapsed/time.Second)+2 {
		t.Fatalf("%d anonymous requests in %v wrote %d log lines with the store's error: one per request", requests, elapsed.Round(time.Millisecond), lines)
	}
	// Still logged: a second later, with the count of those left out.
	time.Sleep(1100 * time.Millisecond)
	f.do(t, "GET", "/v1/calls/"+out.RequestID, "", map[string]string{"Chio-Proof": "1800000000.00"})
	last := logged.String()
	last = last[strings.LastIndex(strings.TrimSuffix(last, "\n"), "\n")+1:]
	if !strings.Contains(last, "db.internal") || strings.Contains(last, "left_out_since_last=0") {
		t.Fatalf("a second after the flood, the store's error is not logged with the count left out: %q", last)
	}
}

// syncBuffer is a bytes.Buffer safe for the handlers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
