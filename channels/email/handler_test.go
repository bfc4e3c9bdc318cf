package email

import (
	"bufio"
	"encoding/json"
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

// A body the link endpoint cannot take is answered with what is wrong
// with it, as chiod's API routes answer: a body over MaxPostBody is 413
// naming the limit (it was a 400 saying only what a body should be), and
// a malformed one names its fault. Nothing is reserved or spent for it.
func TestBadBodiesSayWhatIsWrong(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	srv := httptest.NewServer(c.Handler(nil)) // refused before the kernel is asked
	defer srv.Close()
	link := c.Link("ar-1", "ed25519:ab", now.Add(time.Hour))
	token := `{"approver":"ed25519:ab","request_id":"ar-1"}`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"over the limit", `{"token":"` + strings.Repeat("x", MaxPostBody) + `"}`, http.StatusRequestEntityTooLarge, fmt.Sprint(MaxPostBody)},
		{"empty", "", http.StatusBadRequest, "empty"},
		{"duplicate member", `{"token":` + token + `,"token":` + token + `}`, http.StatusBadRequest, "duplicate"},
		{"unknown member", `{"token":` + token + `,"outcome":"approved"}`, http.StatusBadRequest, "outcome"},
		{"trailing data", `{"token":` + token + `} {}`, http.StatusBadRequest, "trailing"},
		{"not an object", `[` + token + `]`, http.StatusBadRequest, "object"},
		{"no token", `{"token":null}`, http.StatusBadRequest, `"token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Client().Post(srv.URL+LinkPath+link, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Error, Message string }
			err = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || e.Error != httpapi.CodeBadRequest || !strings.Contains(e.Message, tc.want) {
				t.Errorf("%d %+v (%v); want %d bad_request naming %s", resp.StatusCode, e, err, tc.status, tc.want)
			}
			if _, _, err := c.parseLink(link); err != nil {
				t.Errorf("the link is no longer usable after a refused body: %v", err)
			}
		})
	}
}
