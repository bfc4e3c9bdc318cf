package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// callOutcomeCase is one case of testdata/sdk/call_outcomes.json, which the
// Go, Python and TypeScript SDKs are held to: what a call reports when
// every attempt meets the same answer or transport failure.
type callOutcomeCase struct {
	Name              string `json:"name"`
	Refused           bool   `json:"refused"`
	CloseAfterRequest bool   `json:"close_after_request"`
	Answer            *struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"answer"`
	Outcome  string `json:"outcome"`
	Attempts int32  `json:"attempts"`
}

// rawAnswer is c's answer as bytes on the wire (nil: close without one).
func (c *callOutcomeCase) rawAnswer() []byte {
	a := c.Answer
	if a == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\n", a.Status, http.StatusText(a.Status), len(a.Body))
	keys := make([]string, 0, len(a.Headers))
	for k := range a.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, a.Headers[k])
	}
	b.WriteString("\r\n" + a.Body)
	return []byte(b.String())
}

// fakeChiodAnswering serves c on a loopback listener to every request,
// after reading all of it, and counts the requests; for a refused case it
// returns a URL nothing listens on.
func fakeChiodAnswering(t *testing.T, c *callOutcomeCase) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	if c.Refused {
		return freeURL(t), requests
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	answer := c.rawAnswer()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				if _, err := io.Copy(io.Discard, req.Body); err != nil {
					return
				}
				requests.Add(1)
				if answer != nil {
					_, _ = conn.Write(answer)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), requests
}

// checkCallOutcome holds chio call's exit code and stderr to outcome, the
// fixture's word for what the SDKs report. None of these is an outcome
// of the call: every one exits 1. One the SDKs call outcome_unknown names
// the request id as possibly run; not_sent says the call was not sent; a
// refusal by chiod (bad_request, unauthorized, conflict) names chiod's
// error and never says the call may have run.
func checkCallOutcome(t *testing.T, outcome, requestID, so, se string, code int) {
	t.Helper()
	if code != cli.ExitError {
		t.Fatalf("exit %d, want %d (the SDKs: %s)\nstdout %q\nstderr %q", code, cli.ExitError, outcome, so, se)
	}
	mayHaveRun := strings.Contains(se, "request id: "+requestID) && strings.Contains(se, "may have run")
	switch outcome {
	case "outcome_unknown":
		if !mayHaveRun {
			t.Fatalf("stderr %q does not name request %s as possibly run (the SDKs: outcome_unknown)", se, requestID)
		}
	case "not_sent":
		if mayHaveRun || !strings.Contains(se, "the call was not sent") {
			t.Fatalf("stderr %q does not say the call was not sent", se)
		}
	case "bad_request", "unauthorized", "conflict":
		if mayHaveRun || !strings.Contains(se, outcome) {
			t.Fatalf("stderr %q does not report chiod's %s", se, outcome)
		}
	}
}

// chio call reads chiod's answers to a call with its own code, not the Go
// SDK's: it is held to the same shared cases, through a fake chiod on
// loopback. A case the SDKs report as outcome unknown or an error must
// never read as allowed (0), pending (3) or denied (4) — "denied" tells a
// script the call did not run and is safe to send again.
func TestCallOutcomesSharedWithTheSDKs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sdk", "call_outcomes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []callOutcomeCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			url, requests := fakeChiodAnswering(t, &c)
			// The fixture's answers name the call req-outcome.
			so, se, code := chio(inflightAgent(t, url), "call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-outcome")
			checkCallOutcome(t, c.Outcome, "req-outcome", so, se, code)
			if n := requests.Load(); n != c.Attempts {
				t.Fatalf("%d requests reached the listener, want %d", n, c.Attempts)
			}
		})
	}
}

// An answer to a call whose "error" member names an error is chiod's
// error, not an outcome, whatever else it carries (the SDKs raise it as an
// API error): a "denied" beside it must not read as a denial (exit 4: did
// not run), nor an "allowed" as success. One naming outcome_unknown says
// the call may have run, as the SDKs' ErrOutcomeUnknown does.
func TestCallAnswerNamingAnErrorIsNotAnOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		status  int
		body    string
		outcome string
		says    string
	}{
		{"a 403 denial with an error", 403,
			`{"error":"x","message":"m","status":"denied","request_id":"req-outcome","reason":"no","guard":"g","receipt_id":"rc-1"}`,
			"other", "x (403): m"},
		{"a 200 allow with an error", 200,
			`{"error":"x","message":"m","status":"allowed","request_id":"req-outcome","receipt_id":"rc-1","output":{"refund":"re_99"}}`,
			"other", "x (200): m"},
		{"a 202 pending with an error", 202,
			`{"error":"conflict","message":"m","status":"pending_approval","request_id":"req-outcome","approval_request_id":"ar-1","deadline":4102444800}`,
			"conflict", "conflict (202): m"},
		{"a 403 denial with outcome_unknown", 403,
			`{"error":"outcome_unknown","message":"m","status":"denied","request_id":"req-outcome","reason":"no","guard":"g","receipt_id":"rc-1"}`,
			"outcome_unknown", "outcome_unknown (403): m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			oc := callOutcomeCase{Answer: &struct {
				Status  int               `json:"status"`
				Headers map[string]string `json:"headers"`
				Body    string            `json:"body"`
			}{Status: c.status, Body: c.body}}
			url, requests := fakeChiodAnswering(t, &oc)
			so, se, code := chio(inflightAgent(t, url), "call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-outcome")
			checkCallOutcome(t, c.outcome, "req-outcome", so, se, code)
			if !strings.Contains(se, c.says) {
				t.Fatalf("stderr %q does not report chiod's error %q", se, c.says)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests reached the listener, want 1 (not retried)", n)
			}
		})
	}
}
