package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// fakeFront answers every request with h and records the request ids of
// the POST /v1/calls it saw.
func fakeFront(t *testing.T, h http.HandlerFunc) (url string, ids func() []string) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.URL.Path == "/v1/calls" {
			body, _ := io.ReadAll(r.Body)
			var c struct {
				RequestID string `json:"request_id"`
			}
			_ = json.Unmarshal(body, &c)
			mu.Lock()
			seen = append(seen, c.RequestID)
			mu.Unlock()
		}
		h(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// An answer naming a status chiod never sends tells nothing about the
// call: it may have run. chio call must exit non-zero AND name the request
// id it sent (not whatever id the odd answer carries), so that the agent
// can await it or retry it under the same id.
func TestCallUnknownStatusNamesTheRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"status":"queued","request_id":"req-someone-else"}`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
	sent := ids()
	if len(sent) != 1 {
		t.Fatalf("sent %q, want exactly one attempt", sent)
	}
	if code == cli.ExitOK || code == cli.ExitDenied || code == cli.ExitPending {
		t.Fatalf("exit %d for an unknown status", code)
	}
	if !strings.Contains(se, "request id: "+sent[0]) || !strings.Contains(se, "may have run") {
		t.Fatalf("exit %d, stderr %q does not name request %s as possibly run (stdout %q)", code, se, sent[0], so)
	}
}

// A redirect is not chiod's answer (chiod never redirects): the call may or
// may not have reached it. chio call must not follow it (a 302/303 turns
// the POST into a GET elsewhere; a 307 re-posts the signed call to another
// host) and must report the outcome as unknown, naming the request id.
func TestCallRedirectIsNotFollowedAndNamesTheRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	var (
		mu       sync.Mutex
		followed bool
	)
	url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			mu.Lock()
			followed = true
			mu.Unlock()
			rw.WriteHeader(http.StatusNotFound)
			io.WriteString(rw, `{"error":"not_found","message":"no such route"}`)
			return
		}
		http.Redirect(rw, r, "/elsewhere", http.StatusFound)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
	sent := ids()
	mu.Lock()
	defer mu.Unlock()
	if followed {
		t.Errorf("chio call followed a redirect")
	}
	if len(sent) == 0 {
		t.Fatal("no call sent")
	}
	for _, id := range sent {
		if id != sent[0] {
			t.Fatalf("re-sent under another id: %q", sent)
		}
	}
	if code == cli.ExitOK || code == cli.ExitDenied || !strings.Contains(se, "request id: "+sent[0]) {
		t.Fatalf("exit %d, stderr %q: a redirect must read as outcome unknown naming %s (stdout %q)", code, se, sent[0], so)
	}
}

// A proxy's 502 body is the server's text: the "retrying" line that quotes
// it must be escaped like every other error line, so the body cannot write
// terminal escape sequences.
func TestCallRetryLineEscapesTheServersText(t *testing.T) {
	w := newApprovalWorld(t)
	url, _ := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusBadGateway)
		io.WriteString(rw, "bad gateway \x1b]0;owned\x07\x1b[2J")
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
	if code == cli.ExitOK {
		t.Fatalf("exit 0")
	}
	if strings.ContainsAny(so+se, "\x1b\x07") {
		t.Fatalf("raw escape sequence from the server reached the terminal: stderr %q", se)
	}
}

// A retry that meets its call allowed and still executing waits for it;
// if that wait ends on an answer it cannot read, the call is no less
// possibly run: chio call must name the request id, as for a lost answer.
func TestCallSettleOnAnUnreadableAnswerNamesTheRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" {
			rw.WriteHeader(http.StatusAccepted)
			io.WriteString(rw, `{"status":"dispatching"}`)
			return
		}
		io.WriteString(rw, `<html>login</html>`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`, "--request-id", "req-settle-1")
	if sent := ids(); len(sent) != 1 || sent[0] != "req-settle-1" {
		t.Fatalf("sent %q", sent)
	}
	if code == cli.ExitOK || code == cli.ExitDenied || !strings.Contains(se, "request id: req-settle-1") {
		t.Fatalf("exit %d, stderr %q does not name the request id (stdout %q)", code, se, so)
	}
}

// The tool's error and an approver's note are text from elsewhere quoted
// on stderr: escaped, so they cannot write terminal escape sequences.
func TestCallAndAwaitEscapeQuotedTextOnStderr(t *testing.T) {
	w := newApprovalWorld(t)
	const evil = `\u001b]0;owned\u0007\u001b[2J`
	url, _ := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"status":"allowed","request_id":"req-esc-1","output":{"ok":1},"tool_error":"boom `+evil+`",`+
			`"approval":{"status":"approved","approver":"ed25519:x","note":"fine `+evil+`","amended":true,"amended_arguments":{"a":"`+evil+`"}}}`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	for _, args := range [][]string{
		{"call", "demo", "echo", "--args", `{"msg":"x"}`, "--request-id", "req-esc-1"},
		{"await", "req-esc-1", "--timeout", "2s"},
	} {
		so, se, code := w.run(env, args...)
		if code != cli.ExitToolFailed {
			t.Fatalf("%s: exit %d\n%q\n%q", args[0], code, so, se)
		}
		if strings.ContainsAny(se, "\x1b\x07") {
			t.Fatalf("%s: raw escape sequence on stderr: %q", args[0], se)
		}
	}
}

// chiod answers allowed with 200, pending or dispatching with 202, denied
// or cancelled with 403. An answer whose HTTP status and call status
// disagree is not chiod's: never success, never a denial, but unknown.
func TestCallStatusThatDisagreesWithTheHTTPStatusIsUnknown(t *testing.T) {
	w := newApprovalWorld(t)
	for _, c := range []struct {
		code int
		body string
	}{
		{http.StatusForbidden, `{"status":"allowed","output":{"paid":true}}`},
		{http.StatusOK, `{"status":"denied","guard":"x","reason":"y"}`},
		{http.StatusAccepted, `{"status":"allowed","output":{"paid":true}}`},
	} {
		url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(c.code)
			io.WriteString(rw, c.body)
		})
		env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
		so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
		sent := ids()
		if len(sent) != 1 || code == cli.ExitOK || code == cli.ExitDenied || !strings.Contains(se, "request id: "+sent[0]) {
			t.Fatalf("%d %s: exit %d, sent %q\nstdout %q\nstderr %q", c.code, c.body, code, sent, so, se)
		}
	}
}
