package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// A 429 is "unavailable" whoever sends it — chiod's envelope or a
// gateway's plain rate limit — as in the TypeScript and Python SDKs and
// docs/agent-developer.md: the request was turned away, nothing allowed.
func TestGatewayRateLimitIsUnavailable(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"gateway": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte("Too Many Requests"))
		},
		"chiod": reply(429, `{"error":"unavailable","message":"too many streams"}`),
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{h}}
		_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo"})
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("%s: err %v; want ErrUnavailable", name, err)
		}
		if n := f.count(); n != callAttempts {
			t.Fatalf("%s: %d attempts; a 429 is retried", name, n)
		}
	}
	// After a lost answer, a 429 does not make the outcome known.
	f := &fakeChiod{handlers: []http.HandlerFunc{drop, reply(429, "slow down")}}
	_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo"})
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("lost, then 429: err %v; want ErrOutcomeUnknown", err)
	}
}
