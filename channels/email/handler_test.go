package email

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
)

// A client that sends a POST's headers and then stalls is cut at the body
// deadline, through a server configured as chiod's (ReadHeaderTimeout only).
func TestStalledBodyIsCutAtTheDeadline(t *testing.T) {
	const limit = 200 * time.Millisecond
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	if c.o.BodyReadTimeout != httpapi.BodyReadTimeout {
		t.Fatalf("default body read timeout %s, the API's %s", c.o.BodyReadTimeout, httpapi.BodyReadTimeout)
	}
	c.o.BodyReadTimeout = limit
	// The stalled read fails before the kernel is asked anything.
	srv := httptest.NewUnstartedServer(c.Handler(nil))
	srv.Config.ReadHeaderTimeout = 10 * time.Second // as daemon.Run configures it
	srv.Config.IdleTimeout = 120 * time.Second
	srv.Start()
	defer srv.Close()
	path := LinkPath + c.Link("ar-1", "ed25519:ab", now.Add(time.Hour))

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{\"token\":", path)
	// Send nothing more.
	conn.SetReadDeadline(time.Now().Add(limit + 5*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the server still waits for the stalled body after %s: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// A whole body through the same server is read (the deadline is set on
	// net/http's own writer without error) and judged: the wrong approver.
	res, err := srv.Client().Post(srv.URL+path, "application/json",
		strings.NewReader(`{"token":{"approver":"ed25519:cd","request_id":"ar-1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("whole body: status %d", res.StatusCode)
	}
}
