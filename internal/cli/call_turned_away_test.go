package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
)

// A call chiod turns away — its own 503 "unavailable" envelope (the store
// down, too many waiters) or a 429 (its rate limit, or a gateway's) — was
// not taken: nothing was allowed by it, as the SDKs say (ErrUnavailable).
// `chio call` reported it as "the call may have run; its outcome is
// unknown" and re-sent it at once, ignoring the Retry-After chiod asked
// for. It must say the call did not run, and wait at least Retry-After
// before each retry. An attempt whose answer was lost before still makes
// the outcome unknown, whatever the later attempts met.
func TestCallTurnedAwayDidNotRunAndWaitsRetryAfter(t *testing.T) {
	w := newApprovalWorld(t)
	capFile := filepath.Join(w.dir, "agent.cap")
	if err := os.WriteFile(capFile, w.capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		loseFirst  bool // the first attempt's answer is lost (the connection dropped)
		wantRanMay bool
	}{
		{"chiod's 503", http.StatusServiceUnavailable, `{"error":"unavailable","message":"store unavailable"}`, false, false},
		{"chiod's 429", http.StatusTooManyRequests, `{"error":"unavailable","message":"agent over its call rate"}`, false, false},
		{"a gateway's 429", http.StatusTooManyRequests, `slow down`, false, false},
		{"503 after a lost answer", http.StatusServiceUnavailable, `{"error":"unavailable","message":"store unavailable"}`, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				times []time.Time
			)
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				mu.Lock()
				times = append(times, time.Now())
				n := len(times)
				mu.Unlock()
				if tc.loseFirst && n == 1 {
					panic(http.ErrAbortHandler)
				}
				rw.Header().Set("Retry-After", "1")
				if strings.HasPrefix(tc.body, "{") {
					rw.Header().Set("Content-Type", "application/json")
				}
				rw.WriteHeader(tc.status)
				_, _ = rw.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			env := map[string]string{"CHIO_URL": srv.URL, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": capFile}
			so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"hi"}`)
			if code != cli.ExitError {
				t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitError, so, se)
			}
			if got := strings.Contains(se, "may have run"); got != tc.wantRanMay {
				t.Fatalf("says the call may have run: %v, want %v\n%s", got, tc.wantRanMay, se)
			}
			if !tc.wantRanMay && !strings.Contains(se, "did not run") {
				t.Fatalf("does not say the call did not run:\n%s", se)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(times) < 2 {
				t.Fatalf("%d attempts: a turned-away call is retried", len(times))
			}
			for i := 1; i < len(times); i++ {
				if tc.loseFirst && i == 1 {
					continue // the lost answer carried no Retry-After
				}
				if gap := times[i].Sub(times[i-1]); gap < time.Second {
					t.Fatalf("attempt %d came %v after the one chiod told to retry after 1s", i+1, gap)
				}
			}
		})
	}
}
