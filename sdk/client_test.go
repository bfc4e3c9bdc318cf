package chio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

// fakeChiod answers each request with the next handler in line (the last
// one repeats) and records the bodies it got.
type fakeChiod struct {
	mu       sync.Mutex
	handlers []http.HandlerFunc
	bodies   []string
	paths    []string
	headers  []http.Header
}

func (f *fakeChiod) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, string(b))
	f.paths = append(f.paths, r.URL.RequestURI())
	f.headers = append(f.headers, r.Header.Clone())
	h := f.handlers[min(n, len(f.handlers)-1)]
	f.mu.Unlock()
	h(w, r)
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// drop closes the connection without an answer: the request was read,
// its effect (on a real chiod) may have happened.
func drop(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func testClient(t *testing.T, f *fakeChiod, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	k := keys.FromSeed(make([]byte, 32))
	capRaw, _ := json.Marshal(map[string]any{"id": "cap-1", "subject": k.Public().String()})
	c, err := NewClient(srv.URL, append([]Option{WithKey(k), WithCapability(capRaw)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCallToolRetriesWithTheSameBody(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{
		reply(503, `{"error":"unavailable","message":"store busy"}`),
		drop,
		reply(200, `{"status":"allowed","request_id":"req-x","receipt_id":"rc-1","output":{"ok":true}}`),
	}}
	c := testClient(t, f)
	res, err := c.CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "req-x", Arguments: map[string]int{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := res.(*Allowed)
	if !ok || a.ReceiptID != "rc-1" || string(a.Output) != `{"ok":true}` {
		t.Fatalf("result %#v", res)
	}
	if len(f.bodies) != 3 || f.bodies[0] != f.bodies[1] || f.bodies[1] != f.bodies[2] {
		t.Fatalf("want 3 identical bodies, got %d:\n%s", len(f.bodies), strings.Join(f.bodies, "\n"))
	}
	var sent struct {
		RequestID string `json:"request_id"`
	}
	json.Unmarshal([]byte(f.bodies[0]), &sent)
	if !strings.HasPrefix(sent.RequestID, "req-") || f.headers[0].Get("Idempotency-Key") != sent.RequestID {
		t.Fatalf("request id %q, Idempotency-Key %q", sent.RequestID, f.headers[0].Get("Idempotency-Key"))
	}
}

func TestCallToolRetriesAreBounded(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(503, `{"error":"unavailable","message":"down"}`)}}
	c := testClient(t, f)
	_, err := c.CallTool(context.Background(), Call{Server: "demo", Tool: "echo"})
	if !errors.Is(err, ErrUnavailable) || len(f.bodies) != callAttempts {
		t.Fatalf("err %v after %d attempts", err, len(f.bodies))
	}
}

func TestCallToolAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		check      func(Result, error) bool
	}{
		{"pending", `{"status":"pending_approval","request_id":"r","approval_request_id":"ar-1","deadline":1800000000,"summary":"s","receipt_id":"rc"}`, 202,
			func(r Result, err error) bool {
				p, ok := r.(*PendingApproval)
				return ok && p.ApprovalID == "ar-1" && p.Deadline.Equal(time.Unix(1800000000, 0)) && p.Summary == "s"
			}},
		{"denied", `{"status":"denied","request_id":"r","reason":"no","guard":"forbidden_paths","receipt_id":"rc"}`, 403,
			func(r Result, err error) bool {
				d, ok := r.(*Denied)
				return ok && d.Guard == "forbidden_paths" && err == nil
			}},
		{"403 envelope", `{"error":"approval_rejected","message":"x"}`, 403,
			func(r Result, err error) bool { return r == nil && errors.Is(err, ErrApprovalRejected) }},
		{"unauthorized", `{"error":"unauthorized","message":"bad proof"}`, 401,
			func(r Result, err error) bool { return errors.Is(err, ErrUnauthorized) }},
		{"conflict", `{"error":"conflict","message":"request_id already used"}`, 409,
			func(r Result, err error) bool { return errors.Is(err, ErrConflict) }},
		{"bad request", `{"error":"bad_request","message":"x"}`, 400,
			func(r Result, err error) bool {
				var ae *APIError
				return errors.As(err, &ae) && ae.Status == 400 && errors.Is(err, ErrBadRequest)
			}},
		{"unknown status fails closed", `{"status":"maybe","request_id":"r"}`, 200,
			func(r Result, err error) bool { return r == nil && err != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChiod{handlers: []http.HandlerFunc{reply(tc.status, tc.body)}}
			res, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "r"})
			if !tc.check(res, err) {
				t.Fatalf("result %#v err %v", res, err)
			}
			if len(f.bodies) != 1 {
				t.Fatalf("%d requests, want 1 (no retry)", len(f.bodies))
			}
		})
	}
}

func TestCallToolRefusesBadInputLocally(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{}`)}}
	c := testClient(t, f)
	for name, call := range map[string]Call{
		"no tool":         {Server: "demo"},
		"array arguments": {Server: "demo", Tool: "echo", Arguments: []int{1}},
		"duplicate keys":  {Server: "demo", Tool: "echo", Arguments: json.RawMessage(`{"a":1,"a":2}`)},
		"unsafe integer":  {Server: "demo", Tool: "echo", Arguments: json.RawMessage(`{"a":9007199254740993}`)},
		"approval id":     {Server: "demo", Tool: "echo", RequestID: "ar-1"},
	} {
		if _, err := c.CallTool(context.Background(), call); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if len(f.bodies) != 0 {
		t.Fatalf("%d requests sent", len(f.bodies))
	}
	noKey, _ := NewClient("http://127.0.0.1:1")
	if _, err := noKey.CallTool(context.Background(), Call{Server: "demo", Tool: "echo"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("no key: %v", err)
	}
}

func TestNewClientChecksCapabilitySubject(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	other := keys.FromSeed([]byte(strings.Repeat("x", 32)))
	capRaw, _ := json.Marshal(map[string]any{"id": "cap-1", "subject": other.Public().String()})
	if _, err := NewClient("http://127.0.0.1:1", WithKey(k), WithCapability(capRaw)); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("mismatched capability: %v", err)
	}
	if _, err := NewClient("ftp://x"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bad url: %v", err)
	}
}

const allowedWithApproval = `{"status":"allowed","request_id":"req-1","receipt_id":"rc-2","output":{"refund":1},
	"approval_request_id":"ar-1","approval":{"status":"approved","approver":"ed25519:aa","approver_display_name":"Finance Lead",
	"note":"ok","amended":true,"amended_arguments":{"amount":300}}}`

func TestAwaitReconnectsAndResolves(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{
		drop,
		reply(502, `bad gateway`),
		reply(200, `{"status":"pending_approval","request_id":"req-1","approval_request_id":"ar-1"}`),
		reply(200, allowedWithApproval),
	}}
	c := testClient(t, f)
	res, err := c.Await(context.Background(), "req-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Resolution{Status: StatusAllowed, RequestID: "req-1", ApprovalID: "ar-1", ReceiptID: "rc-2", Output: json.RawMessage(`{"refund":1}`),
		Approver: "ed25519:aa", ApproverName: "Finance Lead", Note: "ok", Amended: true, AmendedArguments: json.RawMessage(`{"amount":300}`)}
	got, _ := json.Marshal(res)
	if w, _ := json.Marshal(want); string(got) != string(w) {
		t.Fatalf("resolution\n got %s\nwant %s", got, w)
	}
	for i, p := range f.paths {
		if !strings.HasPrefix(p, "/v1/calls/req-1?wait=") || f.headers[i].Get("Chio-Proof") == "" {
			t.Fatalf("request %d: %s proof %q", i, p, f.headers[i].Get("Chio-Proof"))
		}
	}
}

func TestAwaitDeadlineIsErrTimedOut(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		reply(200, `{"status":"pending_approval","request_id":"req-1"}`)(w, r)
	}}}
	c := testClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Await(ctx, "req-1")
	if !errors.Is(err, ErrTimedOut) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "pending_approval") {
		t.Fatalf("err %v", err)
	}
	// A cancelled context is not a timeout.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := c.Await(ctx, "req-1"); errors.Is(err, ErrTimedOut) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestAwaitDoesNotRetryRefusals(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(401, `{"error":"unauthorized","message":"Chio-Proof does not verify for this id"}`)}}
	_, err := testClient(t, f).Await(context.Background(), "req-1")
	if !errors.Is(err, ErrUnauthorized) || len(f.bodies) != 1 {
		t.Fatalf("err %v after %d requests", err, len(f.bodies))
	}
}

func TestAPIErrorFallsBackOnStatus(t *testing.T) {
	for _, e := range []*APIError{{Status: 502, Code: "Bad Gateway"}, {Status: 504, Code: "unavailable"}, {Status: 500, Code: "Internal Server Error"}} {
		if !errors.Is(e, ErrOutcomeUnknown) || errors.Is(e, ErrUnavailable) || errors.Is(e, ErrBadRequest) || !e.retryable() {
			t.Fatalf("%v: a gateway's 5xx (or any 502/504) is outcome unknown, not unavailable, and retryable", e)
		}
	}
	if e := (&APIError{Status: 503, Code: "unavailable"}); !errors.Is(e, ErrUnavailable) || errors.Is(e, ErrOutcomeUnknown) {
		t.Fatal("chiod's own 503 is unavailable")
	}
	// Without chiod's envelope (an auth proxy, a gateway's missing route),
	// a 401 and a 404 are classified by status, as the other SDKs do.
	for _, c := range []struct {
		e    *APIError
		want error
	}{{&APIError{Status: 401, Code: "Unauthorized"}, ErrUnauthorized}, {&APIError{Status: 404, Code: "404 page not found"}, ErrNotFound}} {
		if !errors.Is(c.e, c.want) || errors.Is(c.e, ErrOutcomeUnknown) || c.e.retryable() {
			t.Fatalf("%v: want %v, final", c.e, c.want)
		}
	}
	if e := (&APIError{Status: 404, Code: "conflict"}); errors.Is(e, ErrNotFound) || !errors.Is(e, ErrConflict) {
		t.Fatal("chiod's envelope wins over the status")
	}
}

// chiod's 500 vote_recorded is its own answer to a vote that IS durable: it
// is neither "outcome unknown" nor worth asking again (the token is spent).
func TestAPIErrorVoteRecorded(t *testing.T) {
	e := &APIError{Status: 500, Code: "vote_recorded", Message: "your vote on ar-1 is recorded"}
	if !errors.Is(e, ErrVoteRecorded) || errors.Is(e, ErrOutcomeUnknown) || errors.Is(e, ErrUnavailable) || e.retryable() {
		t.Fatalf("%v: want ErrVoteRecorded only, final", e)
	}
}

// chiod's 503 vote_uncertain: the vote may or may not be recorded. It is
// neither "nothing allowed" nor "outcome unknown"; ResumeWithApproval asks
// again, with the same token, which settles it. Before chiod had the code,
// an SDK that does not know it reads the 503 as outcome unknown, never as
// ErrUnavailable.
func TestAPIErrorVoteUncertain(t *testing.T) {
	e := &APIError{Status: 503, Code: "vote_uncertain", Message: "your vote on ar-1 may or may not be recorded"}
	if !errors.Is(e, ErrVoteUncertain) || errors.Is(e, ErrOutcomeUnknown) || errors.Is(e, ErrUnavailable) ||
		errors.Is(e, ErrVoteRecorded) || !e.retryable() {
		t.Fatalf("%v: want ErrVoteUncertain only, retried with the same token", e)
	}
	unknown := &APIError{Status: 503, Code: "some_future_code", Message: "…"}
	if !errors.Is(unknown, ErrOutcomeUnknown) || errors.Is(unknown, ErrUnavailable) {
		t.Fatalf("%v: an unknown 5xx code must read as outcome unknown", unknown)
	}
}

// An approver may amend a call to {} (every argument removed): Amended says
// so, and a call approved as sent has Amended false.
func TestAwaitAmendedFlag(t *testing.T) {
	for body, want := range map[string]bool{
		`{"status":"allowed","request_id":"req-1","receipt_id":"rc-2","output":{},"approval_request_id":"ar-1",` +
			`"approval":{"status":"approved","approver":"ed25519:aa","amended":true,"amended_arguments":{}}}`: true,
		`{"status":"allowed","request_id":"req-1","receipt_id":"rc-2","output":{},"approval_request_id":"ar-1",` +
			`"approval":{"status":"approved","approver":"ed25519:aa","amended":false}}`: false,
	} {
		c := testClient(t, &fakeChiod{handlers: []http.HandlerFunc{reply(200, body)}})
		res, err := c.Await(context.Background(), "req-1")
		if err != nil {
			t.Fatal(err)
		}
		if res.Amended != want {
			t.Fatalf("Amended %v, want %v for %s", res.Amended, want, body)
		}
		if a, ok := res.result().(*Allowed); !ok || a.Amended != want {
			t.Fatalf("Allowed %#v: Amended want %v", res.result(), want)
		}
	}
}
