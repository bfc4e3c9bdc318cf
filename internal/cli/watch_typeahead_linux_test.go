package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
)

// TestWatchOnATerminalIgnoresLinesTypedBeforeThePrompt: on a terminal,
// lines typed while no request is shown are ignored. But lines typed while
// a vote was being posted (an impatient "a", Enter, Enter) were held and
// answered the next request the moment it was printed: the approver
// approved a request they had not seen. A prompt on a terminal takes only
// lines typed after it was shown.
func TestWatchOnATerminalIgnoresLinesTypedBeforeThePrompt(t *testing.T) {
	w := newApprovalWorld(t)
	first := w.refund(t, 450)
	second := w.refund(t, 300)
	target, _ := url.Parse(w.url)
	holding, release := make(chan struct{}), make(chan struct{})
	over := make(chan struct{}) // the test is over: let go of the vote
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.Contains(r.URL.Path, first.ApprovalRequestID) && strings.HasSuffix(r.URL.Path, "/respond") {
			rec := httptest.NewRecorder()
			proxyTo(rec, r, target)
			close(holding)
			select { // the vote's answer is slow
			case <-release:
			case <-over:
			}
			for k, v := range rec.Header() {
				rw.Header()[k] = v
			}
			rw.WriteHeader(rec.Code)
			rw.Write(rec.Body.Bytes())
			return
		}
		proxyTo(rw, r, target)
	}))
	defer srv.Close()
	defer close(over)
	master, tty := openPTY(t)
	echo := &promptWatch{} // what the terminal echoes of what is typed
	go io.Copy(echo, master)
	so := &promptWatch{want: "note (optional): ", seen: make(chan struct{})}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: tty, Stdout: so, Stderr: io.Discard, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": srv.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	wait := func(what string, c <-chan struct{}) {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s:\n%s", what, so.String())
		}
	}
	// typeAndRead types s and waits until the terminal has taken it as
	// input (echoed it) and, with read, until the watch has read it all.
	typeAndRead := func(s string, read bool) {
		echoed := len(echo.String())
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); len(echo.String()) < echoed+len(s) || (read && pending(t, tty) > 0); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the watch does not read its terminal:\n%s", so.String())
			}
		}
	}
	shown := func(what string) {
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(so.String(), what); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%q never shown:\n%s", what, so.String())
			}
		}
	}
	shown("[a]pprove")
	typeAndRead("a\n", true)
	wait("no note prompt", so.seen)
	typeAndRead("\n", true)
	wait("no vote posted", holding)
	// Typed while the vote is posted, when no request is shown. (A watch
	// that holds the first line unread until a prompt takes it leaves the
	// second one on the terminal: it is not waited for.)
	typeAndRead("a\n", true)
	typeAndRead("\n", false)
	close(release)
	shown("── " + second.ApprovalRequestID)
	master.Write([]byte{4}) // Ctrl-D: end of input
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not end:\n%s", so.String())
	}
	req, err := w.k.Approval(second.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("lines typed before %s was shown decided it: %s with %d votes\n%s", second.ApprovalRequestID, req.Status, len(req.Votes), so.String())
	}
}

// openPTY opens a pseudo-terminal: master is the keyboard, tty the
// terminal the watch reads.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	var n uint32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatal(err)
	}
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// pending is how many typed bytes the terminal holds unread.
func pending(t *testing.T, tty *os.File) int {
	var n int32
	if err := ioctl(tty, syscall.TIOCINQ, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
