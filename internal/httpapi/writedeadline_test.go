package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Every answer that is not a stream is written under the server's write
// timeout (writedeadline.go): a client that sends a small request and never
// reads the answer is cut instead of pinning the encoded answer.

const writeDeadlinePolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "report"
[[servers.tools]]
name = "deploy"

[[grants]]
id = "report"
server = "pay"
tool = "report"

[[grants]]
id = "deploy"
server = "pay"
tool = "deploy"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Alice"
`

// writeTimeoutForTests is the server's write timeout in these tests.
const writeTimeoutForTests = 300 * time.Millisecond

// bigOutput answers every call with an output just under MaxToolOutputBytes.
type bigOutput struct{}

func (bigOutput) Dispatch(context.Context, kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{Output: json.RawMessage(`"` + strings.Repeat("x", kernel.MaxToolOutputBytes-64) + `"`)}, nil
}

// newWriteDeadlineServer serves a world whose agent holds both grants,
// with the write timeout shortened to writeTimeoutForTests and a small
// server send buffer, so a client that does not read stalls writes soon.
func newWriteDeadlineServer(t *testing.T) (*testkit.World, *httpapi.Server, *httptest.Server) {
	t.Helper()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeDeadlinePolicy, keyAlice.Public()),
		Dispatcher: bigOutput{}, Server: "pay", Grants: []string{"report", "deploy"}})
	api, err := httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: approvalsAdmin,
		ReadToken: approvalsReader, StreamWriteTimeout: writeTimeoutForTests})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			tc.SetWriteBuffer(32 << 10)
		}
	}
	srv.Start()
	t.Cleanup(func() { api.CloseStreams(); srv.Close() })
	return w, api, srv
}

// dialSmallWindow opens a TCP connection whose receive buffer is a few KiB
// (set before connect, so the window is small from the handshake on): a
// client that then never reads stalls the server's writes at once.
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An agent reads its own call (GET /v1/calls/{id} with its Chio-Proof, a
// ~250-byte request) and never reads the answer, which holds the tool's
// output (up to 1 MiB). Each such connection must not pin the encoded
// answer past the write timeout: one proof is replayable for 60 s, so an
// agent could otherwise hold ~1 MiB of chiod's heap per ~250 bytes sent.
func TestStalledReadersOfACallDoNotPinItsOutput(t *testing.T) {
	w, _, srv := newWriteDeadlineServer(t)
	out := w.Submit(t, "report", `{}`, "")
	if out.Status != kernel.StatusAllowed || len(out.Output) < kernel.MaxToolOutputBytes/2 {
		t.Fatalf("call: %s %d bytes", out.Status, len(out.Output))
	}
	proof := httpapi.SignStatusProof(w.Agent, out.RequestID, time.Now())

	// Two collections: encoding/json keeps the buffers of finished answers
	// in a sync.Pool until the second GC after they were put back. That is
	// not a pin; a buffer a blocked write still holds is.
	gc := func() { runtime.GC(); runtime.GC() }
	gc()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	const conns = 24
	addr := srv.Listener.Addr().String()
	for range conns {
		c := dialSmallWindow(t, addr)
		fmt.Fprintf(c, "GET /v1/calls/%s HTTP/1.1\r\nHost: x\r\nChio-Proof: %s\r\n\r\n", out.RequestID, proof)
	}
	// Well past the write timeout.
	wait := 2*time.Second + 5*writeTimeoutForTests
	time.Sleep(wait)
	gc()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	pinned := int64(m1.HeapInuse) - int64(m0.HeapInuse)
	t.Logf("%d never-reading GET /v1/calls/{id}: goroutines %d -> %d, heap in use +%d MiB after %v",
		conns, g0, g1, pinned>>20, wait)
	if pinned > conns*(256<<10) {
		t.Fatalf("%d stalled readers of one call pin %d MiB of heap (%d KiB each) %v after they stopped reading: "+
			"answers are written without a deadline", conns, pinned>>20, pinned/conns>>10, wait)
	}
	if g1-g0 >= conns/2 {
		t.Fatalf("%d stalled readers of one call still hold %d goroutines %v after they stopped reading", conns, g1-g0, wait)
	}
}

// assertCut checks that the server closed c: reading what it holds ends
// with EOF or a reset, not with our read timing out on an open connection
// (which is what a server still blocked in its write, or one that wrote
// the whole answer and keeps the connection alive, looks like).
func assertCut(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection is still open %v after the client stopped reading (%d bytes read once it did): "+
			"the answer is written without a deadline", what, 5*writeTimeoutForTests, n)
	}
}

// An approver's view of a parked call (GET /approvals/{id}) carries its
// exposed arguments, up to 256 KiB: a reader that stops reading is cut at
// the write timeout, like any other answer.
func TestStalledReaderOfAnApprovalIsCut(t *testing.T) {
	w, _, srv := newWriteDeadlineServer(t)
	args := `{"blob":"` + strings.Repeat("y", kernel.MaxArgumentsBytes-64) + `"}`
	out := w.Submit(t, "deploy", args, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("deploy: %+v", out.Status)
	}
	c := dialSmallWindow(t, srv.Listener.Addr().String())
	fmt.Fprintf(c, "GET /approvals/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", out.ApprovalRequestID, approvalsReader)
	time.Sleep(5 * writeTimeoutForTests)
	assertCut(t, c, "GET /approvals/{id}")
}

// The deadline is set when the answer is written, not when the request
// arrives: a long-poll waits longer than the write timeout and still
// answers, on a keep-alive connection whose previous answer's deadline
// has long passed (net/http clears it between requests).
func TestLongPollOutlastsTheWriteTimeout(t *testing.T) {
	w, _, srv := newWriteDeadlineServer(t)
	out := w.Submit(t, "deploy", `{}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("deploy: %+v", out.Status)
	}
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	get := func(path string) (int, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+approvalsReader)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("GET %s: reading the answer: %v", path, err)
		}
		return resp.StatusCode, time.Since(start)
	}
	if status, _ := get("/healthz"); status != 200 {
		t.Fatalf("healthz: %d", status)
	}
	time.Sleep(2 * writeTimeoutForTests) // the deadline healthz's answer left passes
	wait := 4 * writeTimeoutForTests
	status, took := get(fmt.Sprintf("/v1/calls/%s?wait=%dms", out.RequestID, wait.Milliseconds()))
	if status != 200 || took < wait {
		t.Fatalf("long-poll of %v: %d after %v", wait, status, took)
	}
}

// A page from a handler mounted with HandleAnswers (the dashboard, an email
// link, Slack's interactions) is written under the write timeout from its
// first byte: a client that never reads it is cut, and the handler's write
// returns, instead of blocking for as long as the socket stays open. The
// handler may wait before answering as long as it needs.
func TestMountedAnswerOfAStalledReaderIsCut(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{})
	api, err := httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: approvalsAdmin,
		ReadToken: approvalsReader, StreamWriteTimeout: writeTimeoutForTests})
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	page := []byte(strings.Repeat("p", 8<<20))
	api.HandleAnswers("GET /page", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * writeTimeoutForTests) // waiting first is not cut
		_, err := rw.Write(page)
		wrote <- err
	}))
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c := dialSmallWindow(t, srv.Listener.Addr().String())
	if _, err := c.Write([]byte("GET /page HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("an 8 MiB page was written to a client that never reads")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's write to a client that never reads was still blocked after 5 s")
	}
}
