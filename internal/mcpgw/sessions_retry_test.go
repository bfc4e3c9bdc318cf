package mcpgw

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// initializeRetryAfter sends one initialize and returns its status and
// Retry-After header.
func initializeRetryAfter(t *testing.T, url, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// A refused session says when to try again, as chiod's other 429s and
// 503s do (httpapi: WaitRetryAfter, StreamRetryAfter, ExportRetryAfter):
// Retry-After on the agent's 429 and on chiod's 503. A session that opens
// carries none.
func TestRefusedMCPSessionsCarryRetryAfter(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	aud := w.Kernel.PublicKey().String()
	bearer, err := SignSession(w.Agent, w.CapRaw, aud, time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	otherCap, _, err := w.Kernel.IssueCapability(w.Agent.Public(), []string{"bank"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := SignSession(w.Agent, otherCap, aud, time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: 1, MaxSessions: 2})
	want := "10"
	if status, ra := initializeRetryAfter(t, url, bearer); status != http.StatusOK || ra != "" {
		t.Fatalf("first session: %d, Retry-After %q", status, ra)
	}
	if status, ra := initializeRetryAfter(t, url, bearer); status != http.StatusTooManyRequests || ra != want {
		t.Errorf("the agent's session limit: %d, Retry-After %q; want 429 with Retry-After %s", status, ra, want)
	}
	if status, _ := initializeRetryAfter(t, url, other); status != http.StatusOK {
		t.Fatalf("another agent's session: %d", status)
	}
	third, _, err := w.Kernel.IssueCapability(w.Agent.Public(), []string{"bank"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	thirdBearer, err := SignSession(w.Agent, third, aud, time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if status, ra := initializeRetryAfter(t, url, thirdBearer); status != http.StatusServiceUnavailable || ra != want {
		t.Errorf("chiod's session limit: %d, Retry-After %q; want 503 with Retry-After %s", status, ra, want)
	}
}
