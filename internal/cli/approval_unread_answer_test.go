package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// chio approval approve signs a token over the request chiod's answer
// holds. An answer that is not about the request asked for (another
// approval's view, or one with no request in it: a proxy's cache, a wrong
// route) is not a request the approver named: it must sign nothing and post
// nothing.
func TestApproveSignsNothingForAnAnswerAboutAnotherRequest(t *testing.T) {
	w := newApprovalWorld(t)
	mine := w.refund(t, 450).ApprovalRequestID
	other := w.refund(t, 460).ApprovalRequestID
	target, _ := url.Parse(w.url)
	for name, body := range map[string]func() []byte{
		"another request": func() []byte {
			// The other request's real view, as chiod answers it.
			req, _ := http.NewRequest("GET", w.url+"/approvals/"+other, nil)
			req.Header.Set("Authorization", "Bearer "+approvalAdminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return b
		},
		"no request": func() []byte { return []byte(`{"status":"pending"}`) },
	} {
		t.Run(name, func(t *testing.T) {
			var posted atomic.Int32
			front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if r.Method == "GET" && r.URL.Path == "/approvals/"+mine {
					b := body()
					var probe map[string]any
					if json.Unmarshal(b, &probe) != nil {
						t.Fatalf("setup: %s", b)
					}
					rw.Header().Set("Content-Type", "application/json")
					rw.Write(b)
					return
				}
				if r.Method == "POST" {
					posted.Add(1)
				}
				proxyTo(rw, r, target)
			}))
			defer front.Close()
			env := adminEnv()
			env["CHIO_URL"] = front.URL
			so, se, code := w.run(env, "approval", "approve", mine, "--key", w.key("lead"))
			if posted.Load() != 0 || code == 0 {
				t.Fatalf("approve %s posted %d token(s) after an answer about something else; exit %d\n%s\n%s",
					mine, posted.Load(), code, so, se)
			}
		})
	}
}

// approval watch quotes the server in its reconnect line and in a failed
// vote's error line: both must be escaped, so a proxy's page cannot write
// terminal escape sequences into the approver's terminal.
func TestWatchEscapesTheServersErrorText(t *testing.T) {
	w := newApprovalWorld(t)
	w.refund(t, 450)
	target, _ := url.Parse(w.url)
	const evil = "\x1b]0;owned\x07\x1b[2J"
	var streams atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/approvals/stream" && streams.Add(1) == 1:
			rw.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(rw, "down "+evil)
		case strings.HasSuffix(r.URL.Path, "/respond"):
			rw.WriteHeader(http.StatusBadGateway)
			io.WriteString(rw, "bad gateway "+evil)
		default:
			proxyTo(rw, r, target)
		}
	}))
	defer front.Close()
	env := adminEnv()
	env["CHIO_URL"] = front.URL
	so, se, _ := w.watch(t, env, strings.NewReader("a\nok\n"), "--key", w.key("lead"))
	if !strings.Contains(se, "reconnecting") || !strings.Contains(so, "bad gateway") {
		t.Fatalf("setup: stdout %q stderr %q", so, se)
	}
	if strings.ContainsAny(so+se, "\x1b\x07") {
		t.Fatalf("raw escape sequence from the server reached the terminal:\nstdout %q\nstderr %q", so, se)
	}
}
