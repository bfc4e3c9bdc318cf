package mcpgw

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// postAnnouncingBody sends a POST /mcp announcing a body of a megabyte and
// sends one byte of it; it returns the answer read within wait, or the
// read error.
func postAnnouncingBody(t *testing.T, base, bearer string, wait time.Duration) (*http.Response, error) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := "POST " + Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	if bearer != "" {
		req += "Authorization: Bearer " + bearer + "\r\n"
	}
	req += "Content-Length: 1000000\r\n\r\n{"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

// An anonymous POST /mcp is answered 401 before its body is read: a client
// announcing a body it never sends cannot hold a goroutine, a connection
// and a buffer without a credential.
func TestUnauthenticatedMCPPostIsRefusedWithoutReadingBody(t *testing.T) {
	up := &rawUp{tools: benignPay}
	w := newRawWorld(t, up, "")
	resp, err := postAnnouncingBody(t, w.URL, "", 3*time.Second)
	if err != nil {
		t.Fatalf("no answer to an unauthenticated POST /mcp within 3 s (%v): the gateway is reading the "+
			"anonymous client's body before the bearer check, and waits for it indefinitely", err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", resp.StatusCode)
	}
}

// An authenticated client trickling its body is cut at BodyReadTimeout
// (the API's bound), not held indefinitely.
func TestAuthenticatedSlowMCPBodyIsCutAtReadTimeout(t *testing.T) {
	up := &rawUp{tools: benignPay}
	w := newRawWorld(t, up, "")
	const timeout = 300 * time.Millisecond
	g, err := New(Options{Kernel: w.Kernel, Catalog: w.router.MCP(), BodyReadTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := postAnnouncingBody(t, srv.URL, bearer, 5*time.Second)
	if err != nil {
		t.Fatalf("no answer within 5 s to an authenticated POST /mcp whose body never comes (%v): "+
			"the body read has no deadline", err)
	}
	if took := time.Since(start); took < timeout {
		t.Fatalf("answered after %v, before the %v read deadline: the bearer was not accepted?", took, timeout)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400 (body not read in time)", resp.StatusCode)
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}
