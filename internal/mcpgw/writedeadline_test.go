package mcpgw

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// signedPayCall is the body of a tools/call of bank__pay carrying the
// agent's proof, as a bridge sends it.
func signedPayCall(t *testing.T, w *rawWorld) string {
	t.Helper()
	args := json.RawMessage(`{"amount":5}`)
	hash, err := kernel.ParameterHash("bank", "pay", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	requestID := kernel.NewID("mcp-")
	p, err := kernel.SignProof(w.Agent, requestID, w.Cap.ID, "bank", "pay", hash, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(map[string]any{"name": "bank__pay", "arguments": args,
		"_meta": map[string]any{MetaProof: CallProof{RequestID: requestID, IssuedAt: p.IssuedAt, Signature: p.Signature}}})
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":%s}`, params)
}

// A client that asks for a large tools/call result and stops reading is
// cut once a write has waited WriteTimeout: its connection is closed
// rather than pinning a goroutine, the connection and the encoded result
// (up to 1 MiB) for as long as it likes.
func TestStalledReaderOfMCPResultIsCut(t *testing.T) {
	big := strings.Repeat("x", 900<<10) // under the 1 MiB a result may have
	up := &rawUp{tools: benignPay, onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, big)
	}}
	w := newRawWorld(t, up, "")
	const timeout = 300 * time.Millisecond
	g, err := New(Options{Kernel: w.Kernel, Catalog: w.router.MCP(), WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	// Which of the server's connections are closed, by remote address.
	var mu sync.Mutex
	closed := map[string]bool{}
	srv := httptest.NewUnstartedServer(g)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			mu.Lock()
			closed[c.RemoteAddr().String()] = true
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sid := openMCPSession(t, srv.URL, bearer)
	if status, _, body := mcpPost(t, srv.URL, bearer, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", status, body)
	}
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	g0 := runtime.NumGoroutine()

	// The stalled reader: a raw connection that sends the call and never
	// reads. With the server's send buffer small, the kernel cannot take
	// the whole result for it.
	u, _ := url.Parse(srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := signedPayCall(t, w)
	req := "POST " + Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Authorization: Bearer " + bearer + "\r\n" + sessionIDHeader + ": " + sid + "\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cut := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return closed[conn.LocalAddr().String()]
	}
	for !cut() && time.Since(start) < 6*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	g1 := runtime.NumGoroutine()
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if !cut() {
		t.Fatalf("a client that stopped reading a %d KiB tools/call result still holds its connection after %v "+
			"(write timeout %v; goroutines %d -> %d): the result's write has no deadline",
			len(big)>>10, time.Since(start).Round(time.Millisecond), timeout, g0, g1)
	}
	t.Logf("connection cut %v after the call was sent (write timeout %v); goroutines %d -> %d",
		time.Since(start).Round(time.Millisecond), timeout, g0, g1)
}

// smallSendBuffers gives each accepted connection a small, fixed send
// buffer (which turns off the kernel's growing it).
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// Write deadlines are set for a write and cleared after it: on HTTP/2 a
// deadline left armed resets the stream when it passes, even with nothing
// being written, so a quiet standalone SSE stream (or a parked call
// between progress notifications) would be cut at the write timeout.
func TestQuietMCPStreamOutlivesWriteTimeout(t *testing.T) {
	up := &rawUp{tools: benignPay}
	w := newRawWorld(t, up, "")
	const timeout = 200 * time.Millisecond
	g, err := New(Options{Kernel: w.Kernel, Catalog: w.router.MCP(), WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := srv.Client()
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bearer)
		if sid != "" {
			req.Header.Set(sessionIDHeader, sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	init := post("", initializeBody)
	sid := init.Header.Get(sessionIDHeader)
	if init.StatusCode != http.StatusOK || init.ProtoMajor != 2 || sid == "" {
		t.Fatalf("initialize over HTTP/2: %d %s session %q", init.StatusCode, init.Proto, sid)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+Path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set(sessionIDHeader, sid)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	first := make([]byte, len(": ok\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil { // the SDK's opening comment: one write
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1))
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("a quiet standalone stream ended within %v of quiet (write timeout %v): %v", 5*timeout, timeout, err)
	case <-time.After(5 * timeout):
	}
}
