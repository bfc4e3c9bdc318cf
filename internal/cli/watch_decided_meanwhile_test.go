package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
)

// TestWatchSignsNothingForARequestDecidedWhileItsPromptWaited: the prompt
// shows a request and waits for the approver; meanwhile another approver
// decides it. The watch signed and posted a token for it all the same, and
// printed chiod's refusal as an error ("conflict (409)"). Like `chio
// approval approve`, which signs nothing for a request no longer pending,
// it reads the request again before signing: decided elsewhere, it signs
// and posts nothing and says so.
func TestWatchSignsNothingForARequestDecidedWhileItsPromptWaited(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	target, _ := url.Parse(w.url)
	var posted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/respond") {
			posted.Add(1)
		}
		proxyTo(rw, r, target)
	}))
	defer srv.Close()
	pw := startPipedWatchAtNote(t, srv.URL, w.key("lead"))
	// While the lead's prompt waits, the CFO approves the request.
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo")); code != 0 {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	pw.finish(t, "looks fine\n")
	if n := posted.Load(); n != 0 || !strings.Contains(pw.so.String(), out.ApprovalRequestID+" was decided while you answered") {
		t.Fatalf("the watch posted %d tokens for a request already approved:\n%s\n%s", n, pw.so.String(), pw.se.String())
	}
}

// pipedWatch is `chio approval watch` reading a pipe the test writes.
type pipedWatch struct {
	typing *io.PipeWriter
	so     *promptWatch
	se     bytes.Buffer // read once the watch has ended
	done   chan int
}

// startPipedWatchAtNote starts the watch of key against url, answers the
// first request it shows "a" (approve) and waits for its note prompt.
func startPipedWatchAtNote(t *testing.T, url, key string) *pipedWatch {
	t.Helper()
	stdin, typing := io.Pipe()
	pw := &pipedWatch{typing: typing, so: &promptWatch{want: "note (optional): ", seen: make(chan struct{})}, done: make(chan int, 1)}
	go func() {
		pw.done <- cli.Main([]string{"approval", "watch", "--key", key},
			&cli.Env{Stdin: stdin, Stdout: pw.so, Stderr: &pw.se, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": url, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	typing.Write([]byte("a\n"))
	select {
	case <-pw.so.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no note prompt:\n%s", pw.so.String())
	}
	return pw
}

// finish writes the rest of the input, ends it and waits for the watch.
func (pw *pipedWatch) finish(t *testing.T, rest string) {
	t.Helper()
	pw.typing.Write([]byte(rest))
	pw.typing.Close()
	select {
	case <-pw.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not end:\n%s", pw.so.String())
	}
}

// promptWatch is stdout, closing seen once want is written.
type promptWatch struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
}

func (p *promptWatch) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.Write(b)
	if p.want != "" && strings.Contains(p.b.String(), p.want) {
		p.want = ""
		close(p.seen)
	}
	return len(b), nil
}

func (p *promptWatch) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}
