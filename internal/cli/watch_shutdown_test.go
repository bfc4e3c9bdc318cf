package cli_test

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
)

// While chiod shuts down, `chio approval watch` says so and reconnects
// with a growing delay. (A stream answered 200 and ended at once had it
// print "unexpected EOF" and, having been given the replayed requests,
// reconnect every 250 ms for as long as the shutdown lasted.)
func TestWatchSaysChiodIsShuttingDown(t *testing.T) {
	w := newApprovalWorld(t)
	w.refund(t, 450)        // pending: a stream replays it
	w.tw.API.CloseStreams() // chiod's shutdown has begun; this one still answers
	stdin, typing := io.Pipe()
	se := &reconnectLines{enough: 3, seen: make(chan struct{})}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: stdin, Stdout: io.Discard, Stderr: se, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": w.url, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	select {
	case <-se.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not reconnect 3 times:\n%s", se.String())
	}
	typing.Close() // end of input ends the watch
	if code := <-done; code != 0 {
		t.Fatalf("watch: exit %d\n%s", code, se.String())
	}
	out := se.String()
	if !strings.Contains(out, "event stream: unavailable (503): chiod is shutting down") {
		t.Fatalf("the watch does not say chiod is shutting down:\n%s", out)
	}
	var delays []time.Duration
	for _, m := range regexp.MustCompile(`reconnecting in (\S+)\n`).FindAllStringSubmatch(out, 3) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, d)
	}
	if len(delays) != 3 || delays[2] < 2*delays[0] {
		t.Fatalf("reconnect delays %v do not grow:\n%s", delays, out)
	}
}

// reconnectLines is stderr, closing seen once enough reconnects are told.
type reconnectLines struct {
	mu     sync.Mutex
	b      bytes.Buffer
	enough int
	seen   chan struct{}
}

func (r *reconnectLines) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b.Write(p)
	if r.enough > 0 && strings.Count(r.b.String(), "reconnecting in") >= r.enough {
		r.enough = 0
		close(r.seen)
	}
	return len(p), nil
}

func (r *reconnectLines) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}
