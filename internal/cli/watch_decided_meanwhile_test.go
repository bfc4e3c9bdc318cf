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
	stdin, typing := io.Pipe()
	so := &promptWatch{want: "note (optional): ", seen: make(chan struct{})}
	var se bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: stdin, Stdout: so, Stderr: &se, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": srv.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	typing.Write([]byte("a\n"))
	select {
	case <-so.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no note prompt:\n%s", so.String())
	}
	// While the lead's prompt waits, the CFO approves the request.
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo")); code != 0 {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	typing.Write([]byte("looks fine\n"))
	typing.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not end:\n%s", so.String())
	}
	if n := posted.Load(); n != 0 || !strings.Contains(so.String(), out.ApprovalRequestID+" was decided while you answered") {
		t.Fatalf("the watch posted %d tokens for a request already approved:\n%s\n%s", n, so.String(), se.String())
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
