package chio

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// arrivals records when each request reached the fake chiod.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) record(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		a.mu.Unlock()
		h(w, r)
	}
}

func refusedFor(seconds string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", seconds)
		reply(http.StatusTooManyRequests, `{"error":"unavailable","message":"this credential already holds 8 concurrent waits, the most it may; retry later"}`)(w, r)
	}
}

// chiod refuses a long-poll over the credential's share with 429 and
// Retry-After: the SDK asks again no sooner than it says, instead of its
// own 250 ms backoff, which would hammer a chiod that has said when.
func TestAwaitHonoursRetryAfter(t *testing.T) {
	var a arrivals
	f := &fakeChiod{handlers: []http.HandlerFunc{a.record(refusedFor("1")), a.record(reply(200, allowedWithApproval))}}
	if _, err := testClient(t, f).Await(context.Background(), "req-1"); err != nil {
		t.Fatal(err)
	}
	if len(a.at) != 2 {
		t.Fatalf("%d requests, want 2", len(a.at))
	}
	if gap := a.at[1].Sub(a.at[0]); gap < time.Second {
		t.Fatalf("asked again %v after a 429 with Retry-After: 1", gap.Round(time.Millisecond))
	}
}

// A Retry-After beyond the caller's deadline is not slept out: the wait
// ends at once with chiod's refusal, which says why.
func TestAwaitRetryAfterBeyondTheDeadlineEndsAtOnce(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{refusedFor("30")}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := testClient(t, f).Await(ctx, "req-1")
	if took := time.Since(start); took > 2*time.Second || len(f.bodies) != 1 {
		t.Fatalf("took %v and %d requests; want one request and an answer at once", took.Round(time.Millisecond), len(f.bodies))
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.RetryAfter != 30*time.Second || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v (%+v); want chiod's 429 unavailable, Retry-After 30s", err, ae)
	}
}

// RFC 9110 allows Retry-After as an HTTP-date, which a proxy or load
// balancer in front of chiod may send: it asks for the same wait as the
// seconds until that date, never none. (Python's and TypeScript's
// retry-after tests are the same test.)
func TestRetryAfterAsAnHTTPDateIsHonoured(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{refusedFor(time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat))}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := testClient(t, f).Await(ctx, "req-1")
	if len(f.bodies) != 1 {
		t.Fatalf("asked %d times in spite of a Retry-After 30 s away", len(f.bodies))
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.RetryAfter <= 20*time.Second || ae.RetryAfter > 30*time.Second {
		t.Fatalf("err %v (%+v); want chiod's 429 unavailable, Retry-After about 30s", err, ae)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "1": time.Second, "10": 10 * time.Second, " 7 ": 7 * time.Second,
		"3600": time.Hour, "86400": time.Hour, "18446744074": time.Hour, "99999999999999999999999": time.Hour,
		"-1": 0, "1.5": 0, "soon": 0, "Wed, 21 Oct 2015 07:28:00 GMT": 0, "+5": 0,
		// HTTP-dates (IMF-fixdate, RFC 850, asctime): a date past is 0, one
		// more than an hour away is capped; a date in no HTTP-date form is 0.
		"Sunday, 06-Nov-94 08:49:37 GMT": 0, "Sun Nov  6 08:49:37 1994": 0,
		"Fri, 31 Dec 9999 23:59:59 GMT": time.Hour, "Friday, 31-Dec-99 23:59:59 GMT": 0, "Fri Dec 31 23:59:59 9999": time.Hour,
		"Fri, 31 Dec 9999 23:59:59 PST": 0, "9999-12-31T23:59:59Z": 0, "Fri, 31 Dec 9999": 0,
	} {
		if got := parseRetryAfter(in); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// A call turned away with Retry-After (a gateway's rate limit, or chiod)
// is sent again, same body, no sooner than it says; with the deadline
// nearer, it ends at once as unavailable: nothing was allowed.
func TestCallToolHonoursRetryAfter(t *testing.T) {
	var a arrivals
	f := &fakeChiod{handlers: []http.HandlerFunc{a.record(refusedFor("1")),
		a.record(reply(200, `{"status":"allowed","request_id":"req-x","receipt_id":"rc-1","output":{"ok":true}}`))}}
	c := testClient(t, f)
	if _, err := c.CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "req-x", Arguments: map[string]int{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if len(a.at) != 2 || a.at[1].Sub(a.at[0]) < time.Second || f.bodies[0] != f.bodies[1] {
		t.Fatalf("%d requests, the second %v after the first; want the same body again after Retry-After: 1", len(a.at), a.at[len(a.at)-1].Sub(a.at[0]))
	}

	g := &fakeChiod{handlers: []http.HandlerFunc{refusedFor("30")}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := testClient(t, g).CallTool(ctx, Call{Server: "demo", Tool: "echo", Arguments: map[string]int{"n": 1}})
	if took := time.Since(start); took > 2*time.Second || len(g.bodies) != 1 || !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("took %v, %d requests, err %v; want one request and unavailable at once", took.Round(time.Millisecond), len(g.bodies), err)
	}
}
