package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
)

// A request whose body its route never reads (an unauthenticated POST to
// an admin route, an unknown path, a GET with a body, a route that takes
// no body) must not hold its connection. net/http drains up to 256 KiB of
// an unread body before writing the answer, with no deadline of its own: a
// client announcing a body and trickling it (or sending nothing more) held
// the connection and its goroutine without bound, with no credential at
// all. This package's routes now answer at once and close the connection;
// a route mounted with Handle is cut at BodyReadTimeout.
func TestUnreadBodyCannotHoldTheConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("waits BodyReadTimeout")
	}
	t.Parallel()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeDeadlinePolicy, keyAlice.Public()), Serve: true,
		BeforeServe: func(w *testkit.World) {
			w.API.Handle("GET /mounted", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.WriteHeader(http.StatusNoContent) // never reads the body
			}))
		}})
	stall := func(head string, length int) net.Conn {
		conn, err := net.Dial("tcp", strings.TrimPrefix(w.Srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// Announce length bytes, send one, then stall.
		fmt.Fprintf(conn, "%s\r\nHost: chio\r\nContent-Length: %d\r\n\r\n{", head, length)
		return conn
	}
	mounted := stall("GET /mounted HTTP/1.1", 1000)
	// A body of 256 KiB or more net/http never drains: it closes the
	// connection after the answer, at once (the deadline's wrapper must
	// not hide the body's size from it).
	big := stall("GET /mounted HTTP/1.1", 1<<20)
	_ = big.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(big), nil); err != nil {
		t.Errorf("a mounted route with a 1 MiB body announced: no answer within 5s (%v)", err)
	} else {
		resp.Body.Close()
	}
	mountedLimit := time.Now().Add(httpapi.BodyReadTimeout + 5*time.Second)
	for _, head := range []string{
		"POST /v1/capabilities HTTP/1.1",          // admin route, no token: 401
		"POST /v1/nowhere HTTP/1.1",               // no route: 404
		"GET /healthz HTTP/1.1",                   // a GET with a body
		"POST /v1/capabilities/x/revoke HTTP/1.1", // never reads a body
	} {
		conn := stall(head, 1000)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s with a stalled body: no answer within 5s (%v): the connection is held", head, err)
			continue
		}
		resp.Body.Close()
		if head != "GET /healthz HTTP/1.1" && (resp.StatusCode < 400 || resp.StatusCode >= 500) {
			t.Errorf("%s: status %d, want a 4xx", head, resp.StatusCode)
		}
		if !resp.Close {
			t.Errorf("%s: the connection stays open with the rest of the body unread", head)
		}
	}
	// A mounted route: the connection ends by BodyReadTimeout, answered or not.
	_ = mounted.SetReadDeadline(mountedLimit)
	if _, err := io.ReadAll(mounted); err != nil {
		t.Errorf("a mounted route with a stalled body still holds the connection past BodyReadTimeout: %v", err)
	}
}

// The body-read deadline ends with the body: a handler that has read its
// body and then works longer than BodyReadTimeout (a long tool call, an
// MCP stream) keeps its request context while the client waits.
func TestBodyReadDeadlineEndsWithTheBody(t *testing.T) {
	if testing.Short() {
		t.Skip("waits BodyReadTimeout")
	}
	t.Parallel()
	ended := make(chan error, 1)
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeDeadlinePolicy, keyAlice.Public()), Serve: true,
		BeforeServe: func(w *testkit.World) {
			w.API.Handle("POST /slow", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					ended <- err
					return
				}
				select {
				case <-time.After(httpapi.BodyReadTimeout + 3*time.Second):
					ended <- nil
					rw.WriteHeader(http.StatusNoContent)
				case <-r.Context().Done():
					ended <- r.Context().Err()
				}
			}))
		}})
	resp, err := http.Post(w.Srv.URL+"/slow", "application/json", strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-ended; err != nil {
		t.Fatalf("the request's context ended while its client waited: %v", err)
	}
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
