package httpapi_test

// The stream's bounds: replay bytes, per-credential and global caps, separate
// pools for streams and long-polls, and stalled clients.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const streamPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "bulk"

[[grants]]
id = "bulk"
server = "pay"
tool = "bulk"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Alice"
`

// streamFixture serves the API with a short stream write timeout over a
// policy whose approval requests show their (large) arguments.
type streamFixture struct {
	w   *testkit.World
	k   *kernel.Kernel
	srv *httptest.Server
}

func newStreamFixture(t *testing.T, writeTimeout time.Duration) *streamFixture {
	t.Helper()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(streamPolicy, keyAlice.Public()),
		Dispatcher: &argsDispatcher{}, Server: "pay", Grants: []string{"bulk"}})
	api, err := httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: approvalsAdmin,
		ReadToken: approvalsReader, StreamWriteTimeout: writeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api)
	// Small, fixed socket send buffers, so a client that does not read
	// blocks chiod's writes after kilobytes, whatever the host's autotuning.
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			tc.SetWriteBuffer(32 << 10)
		}
	}
	srv.Start()
	t.Cleanup(func() { api.CloseStreams(); srv.Close() })
	return &streamFixture{w: w, k: w.Kernel, srv: srv}
}

// park parks a call whose exposed arguments are about n bytes.
func (f *streamFixture) park(t *testing.T, n int) string {
	t.Helper()
	out := f.w.Submit(t, "bulk", `{"blob":"`+strings.Repeat("b", n)+`"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending, got %+v", out)
	}
	return out.ApprovalRequestID
}

// TestStreamReplayIsBoundedInBytes: the replay stops before
// MaxStreamReplayBytes, except that the oldest request is always sent.
func TestStreamReplayIsBoundedInBytes(t *testing.T) {
	f := newStreamFixture(t, 0)
	// A 255 KiB request alone is over the budget: it is sent, and alone.
	big := f.park(t, 255<<10)
	var small []string
	for i := 0; i < 3; i++ {
		small = append(small, f.park(t, 100<<10))
	}
	replay := func() (ids []string, bytes int, truncated map[string]any) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader))
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var typ string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = line[7:]
			case strings.HasPrefix(line, "data: ") && typ == kernel.EventApprovalRequested:
				bytes += len(line) - 6
				var e kernel.Event
				if err := json.Unmarshal([]byte(line[6:]), &e); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, e.Approval.ApprovalID)
			case strings.HasPrefix(line, "data: ") && typ == httpapi.EventStreamTruncated:
				json.Unmarshal([]byte(line[6:]), &truncated)
				return
			case strings.HasPrefix(line, ": keepalive"):
				return
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return
	}
	ids, n, tr := replay()
	if len(ids) != 1 || ids[0] != big || tr == nil || tr["replayed"] != float64(1) {
		t.Fatalf("replay %v (%d bytes), notice %v", ids, n, tr)
	}
	t.Logf("oversized oldest request: replayed alone, %d bytes", n)
	// Once it is decided, two 100 KiB requests fit and the third does not.
	if status, m := f.respond(t, big); status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	ids, n, tr = replay()
	if len(ids) != 2 || ids[0] != small[0] || ids[1] != small[1] || n > httpapi.MaxStreamReplayBytes || tr == nil || tr["replayed"] != float64(2) {
		t.Fatalf("replay %v (%d bytes), notice %v", ids, n, tr)
	}
	t.Logf("replay of 3 × 100 KiB requests: 2 sent, %d bytes", n)
}

func (f *streamFixture) respond(t *testing.T, id string) (int, map[string]any) {
	t.Helper()
	tok := f.w.Token(t, id, keyAlice, "denied", nil)
	resp, err := http.Post(f.srv.URL+"/approvals/"+id+"/respond", "application/json", strings.NewReader(respondBody(tok, "")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestStreamCredentialCaps: each bearer token and each approver (over all
// their sessions) has a share of the streams; past it, 429 with the error
// envelope; other credentials are unaffected; a closed stream frees its slot.
func TestStreamCredentialCaps(t *testing.T) {
	f := newApprovalsFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := 0; i < httpapi.MaxStreamsPerToken; i++ {
		resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader))
		if resp.StatusCode != 200 {
			t.Fatalf("reader stream %d: %d", i, resp.StatusCode)
		}
		open = append(open, resp)
	}
	refused(t, openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader)), http.StatusTooManyRequests)
	admin := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsAdmin))
	if admin.StatusCode != 200 {
		t.Fatalf("the admin token shares the reader's cap: %d", admin.StatusCode)
	}
	open = append(open, admin)

	// Alice signs in three times; her share is counted over all sessions.
	var alice []*sessionClient
	for i := 0; i < 3; i++ {
		c := newSessionClient(t, f)
		if code, m, _ := c.login(keyAlice, keyAlice.Public().String(), c.challenge()); code != 200 {
			t.Fatalf("login: %d %v", code, m)
		}
		alice = append(alice, c)
	}
	var aliceStreams []*http.Response
	for i := 0; i < httpapi.MaxStreamsPerApprover; i++ {
		resp := openStream(t, ctx, alice[i%len(alice)].http, f.srv.URL, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("alice stream %d: %d", i, resp.StatusCode)
		}
		aliceStreams = append(aliceStreams, resp)
	}
	open = append(open, aliceStreams...)
	refused(t, openStream(t, ctx, alice[2].http, f.srv.URL, nil), http.StatusTooManyRequests)
	bob := newSessionClient(t, f)
	if code, m, _ := bob.login(keyBob, keyBob.Public().String(), bob.challenge()); code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	if resp := openStream(t, ctx, bob.http, f.srv.URL, nil); resp.StatusCode != 200 {
		t.Fatalf("bob: %d", resp.StatusCode)
	} else {
		open = append(open, resp)
	}
	// Closing one of Alice's streams gives her the slot back.
	aliceStreams[0].Body.Close()
	eventually(t, "a closed stream's slot to be freed", func() bool {
		resp := openStream(t, ctx, alice[0].http, f.srv.URL, nil)
		if resp.StatusCode == 200 {
			open = append(open, resp)
			return true
		}
		resp.Body.Close()
		return false
	})
}

// TestStreamAndWaitPoolsAreSeparate: with every stream slot taken, an
// agent's long-poll still waits and returns when its call is approved;
// with every waiter slot taken, streams still open.
func TestStreamAndWaitPoolsAreSeparate(t *testing.T) {
	f := newApprovalsFixture(t)
	fill := func(p kernel.Pool) (release func()) {
		var cancels []func()
		for {
			_, cancel, ok := f.k.Subscribe(p)
			if !ok {
				break
			}
			cancels = append(cancels, cancel)
		}
		return func() {
			for _, c := range cancels {
				c()
			}
		}
	}
	release := fill(kernel.PoolStream)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refused(t, openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader)), http.StatusServiceUnavailable)

	out := f.pendingRefund(t)
	var wg sync.WaitGroup
	var status int
	var m map[string]any
	wg.Add(1)
	go func() {
		defer wg.Done()
		status, m = f.do(t, "GET", "/v1/calls/"+out.RequestID+"?wait=20s", "", withBearer(approvalsReader))
	}()
	eventually(t, "the long-poll to subscribe", func() bool { return f.k.Subscribers(kernel.PoolWait) == 1 })
	tok := f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil)
	if s, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); s != 200 {
		t.Fatalf("%d %v", s, m)
	}
	wg.Wait()
	if status != 200 || m["status"] != kernel.StatusAllowed {
		t.Fatalf("long-poll with every stream slot taken: %d %v", status, m)
	}
	release()

	defer fill(kernel.PoolWait)()
	resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream with every waiter slot taken: %d", resp.StatusCode)
	}
	other := f.pendingRefund(t)
	if s, m := f.do(t, "GET", "/v1/calls/"+other.RequestID+"?wait=5s", "", withBearer(approvalsReader)); s != 503 || m["error"] != "unavailable" {
		t.Fatalf("long-poll at the waiters' cap: %d %v", s, m)
	}
}

// TestStalledStreamIsCut: a client that sends the request and never reads
// is cut after the write timeout: its subscription and its credential's
// slot are released, without the kernel having had to drop it.
func TestStalledStreamIsCut(t *testing.T) {
	f := newStreamFixture(t, 300*time.Millisecond)
	f.park(t, 200<<10)
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive window, so chiod's writes block soon.
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := io.WriteString(conn, "GET /approvals/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+approvalsReader+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stream to subscribe", func() bool { return f.k.Subscribers(kernel.PoolStream) == 1 })
	// Fewer events than the stream's buffer: only the write timeout can end it.
	published := 0
	for f.k.Subscribers(kernel.PoolStream) == 1 {
		if published == kernel.StreamBuffer-1 {
			t.Fatalf("the stalled stream was not cut after %d events of 200 KiB", published)
		}
		f.park(t, 200<<10)
		published++
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("stalled stream cut after %d live events of ~200 KiB", published)
	// The reader's slot is free again: MaxStreamsPerToken streams open.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < httpapi.MaxStreamsPerToken; i++ {
		resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader))
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d after the cut: %d", i, resp.StatusCode)
		}
	}
}
