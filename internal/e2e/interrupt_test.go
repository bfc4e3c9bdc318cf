//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// holdingProxy stands between chio and chiod. It forwards POST /v1/calls
// to chiod, reports chiod's answer on answered, and then never passes the
// answer on: the call is decided (parked) while the CLI still waits for
// it, as when chiod's answer is slow or lost on the way. Every other
// request is forwarded; a call-status read (chio await's long-poll) is
// reported on polled as it starts.
type holdingProxy struct {
	url      string
	answered chan heldAnswer
	polled   chan string
}

// heldAnswer is what the CLI sent and what chiod answered.
type heldAnswer struct {
	sentRequestID string
	outcome       kernel.Outcome
}

func newHoldingProxy(t *testing.T, chiod string) *holdingProxy {
	t.Helper()
	target, err := url.Parse(chiod)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{answered: make(chan heldAnswer, 4), polled: make(chan string, 16)}
	forward := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/calls":
			body, _ := io.ReadAll(r.Body)
			var sent kernel.ToolCall
			_ = json.Unmarshal(body, &sent)
			resp, err := http.Post(chiod+"/v1/calls", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Errorf("proxy: %v", err)
				return
			}
			var out kernel.Outcome
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			p.answered <- heldAnswer{sentRequestID: sent.RequestID, outcome: out}
			<-r.Context().Done() // held until the CLI goes
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/calls/"):
			p.polled <- strings.TrimPrefix(r.URL.Path, "/v1/calls/")
			forward.ServeHTTP(w, r)
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

var requestIDLine = regexp.MustCompile(`chio: request id: (\S+) `)

// TestInterruptedCallNamesItsRequest: Ctrl-C (SIGINT) or a timeout
// wrapper's SIGTERM while `chio call` waits for chiod's answer — the call
// already parked for approval — leaves the call alive. The CLI must name
// the request id it sent and how to await or retry it, exit 130 / 143, and
// never print it as denied or failed; the id it names must be awaitable and
// resolve once a human approves. `chio await` interrupted says what it was
// waiting for and how to resume.
func TestInterruptedCallNamesItsRequest(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	d := startDaemon(t, filepath.Join(root, "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	leadKey := filepath.Join(root, "examples", "keys", "finance-lead.pem")
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatal("keygen")
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "refunds", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %s", errOut)
	}
	agentEnv := []string{"CHIO_KEY=" + filepath.Join(work, "agent.pem")}

	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		exit int
	}{{"SIGINT", syscall.SIGINT, 130}, {"SIGTERM", syscall.SIGTERM, 143}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newHoldingProxy(t, d.url)
			call := d.startBackground(t, work, agentEnv, "call", "demo", "issue_refund", "--url", p.url,
				"--args", approvalRefundArgs, "--intent", approvalRefundIntent, "--capability", "agent.cap", "--key", "agent.pem")
			var held heldAnswer
			select {
			case held = <-p.answered:
			case <-time.After(30 * time.Second):
				t.Fatal("the call never reached chiod")
			}
			if held.outcome.Status != kernel.StatusPendingApproval {
				t.Fatalf("chiod answered %+v, want the call parked", held.outcome)
			}
			call.cmd.Process.Signal(tc.sig)
			out, errOut, code := call.wait(t, 30*time.Second)
			m := requestIDLine.FindStringSubmatch(errOut)
			if code != tc.exit || out != "" || m == nil {
				t.Fatalf("interrupted call: exit %d (want %d), stdout %q, stderr:\n%s", code, tc.exit, out, errOut)
			}
			id := m[1]
			for _, want := range []string{
				"chio: interrupted (" + tc.name + ") before chiod's answer arrived",
				"may have reached chiod",
				"chio call demo issue_refund --request-id " + id,
				"chio await " + id,
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if id != held.sentRequestID {
				t.Errorf("stderr names %s, the call sent was %s", id, held.sentRequestID)
			}
			if strings.Contains(errOut, "denied") || strings.Contains(errOut, "cannot reach") {
				t.Errorf("an interrupted call reads as denied or failed:\n%s", errOut)
			}

			// chio await, interrupted in its long-poll, names what it
			// waited for and how to resume.
			aw := d.startBackground(t, work, agentEnv, "await", id, "--url", p.url, "--timeout", "60s")
			select {
			case <-p.polled:
			case <-time.After(30 * time.Second):
				t.Fatal("chio await never polled")
			}
			aw.cmd.Process.Signal(tc.sig)
			_, errOut, code = aw.wait(t, 30*time.Second)
			if code != tc.exit || !strings.Contains(errOut, "chio: interrupted ("+tc.name+") while waiting for "+id) ||
				!strings.Contains(errOut, "wait again with: chio await "+id) {
				t.Fatalf("interrupted await: exit %d (want %d), stderr:\n%s", code, tc.exit, errOut)
			}

			// The named id is the parked call: approve it, and an await
			// of that id sees it run.
			aw = d.startBackground(t, work, agentEnv, "await", id, "--timeout", "60s")
			if out, errOut, code := d.chio(t, work, "approval", "approve", held.outcome.ApprovalRequestID, "--key", leadKey); code != 0 {
				t.Fatalf("approve: %d %s %s", code, out, errOut)
			}
			out, errOut, code = aw.wait(t, 30*time.Second)
			if code != 0 || !strings.Contains(out, `"refund_id":"rf-`) {
				t.Fatalf("await after approval: exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
		})
	}
}

// TestCallInterruptedBeforeSending: a signal while chio is still connecting
// (here: a TLS handshake that never completes, so not one byte of the
// request was written) says truthfully that nothing was sent and names no
// request to await.
func TestCallInterruptedBeforeSending(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	d := startDaemon(t, filepath.Join(root, "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatal("keygen")
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "refunds", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %s", errOut)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered: the handshake hangs
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	})
	call := d.startBackground(t, work, nil, "call", "demo", "issue_refund", "--url", "https://"+ln.Addr().String(),
		"--args", approvalRefundArgs, "--intent", approvalRefundIntent, "--capability", "agent.cap", "--key", "agent.pem")
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("chio never connected")
	}
	call.cmd.Process.Signal(syscall.SIGINT)
	out, errOut, code := call.wait(t, 30*time.Second)
	if code != 130 || out != "" || !strings.Contains(errOut, "chio: interrupted (SIGINT) before the call was sent: this run sent nothing to chiod") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "chio await") || strings.Contains(errOut, "request id:") || strings.Contains(errOut, "req-") {
		t.Fatalf("names a request that was never sent:\n%s", errOut)
	}
}
