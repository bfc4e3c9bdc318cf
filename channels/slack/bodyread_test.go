package slack_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/httpapi"
)

func TestBodyReadTimeoutMatchesTheAPI(t *testing.T) {
	if slack.DefaultBodyReadTimeout != httpapi.BodyReadTimeout {
		t.Fatalf("slack %s, API %s", slack.DefaultBodyReadTimeout, httpapi.BodyReadTimeout)
	}
}

// The endpoint is public and reads the body before authenticating it. A
// client that sends headers and then stalls is cut at the body deadline,
// through a server configured as chiod's (ReadHeaderTimeout only).
func TestStalledBodyIsCutAtTheDeadline(t *testing.T) {
	const limit = 200 * time.Millisecond
	w := newWorld(t, func(o *slack.Options) { o.BodyReadTimeout = limit })
	srv := httptest.NewUnstartedServer(w.handler)
	srv.Config.ReadHeaderTimeout = 10 * time.Second // as daemon.Run configures it
	srv.Config.IdleTimeout = 120 * time.Second
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"X-Slack-Request-Timestamp: 1\r\nX-Slack-Signature: v0=00\r\nContent-Length: 60000\r\n\r\npayload=", slack.InteractionsPath)
	// Send nothing more.
	conn.SetReadDeadline(time.Now().Add(limit + 5*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the server still waits for the stalled, unauthenticated body after %s: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// A whole click through the same server still works: the deadline is
	// set on net/http's own writer without error.
	id := w.refund(t).ApprovalRequestID
	w.posted(t, id)
	r := w.sign(clickBody(lead, slack.ActionDeny, id), w.clk.Now(), secret)
	req, _ := http.NewRequest("POST", srv.URL+slack.InteractionsPath, strings.NewReader(string(r.body)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(slack.HeaderTimestamp, r.ts)
	req.Header.Set(slack.HeaderSignature, r.sig)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || w.approval(t, id).Status != "denied" {
		t.Fatalf("click over HTTP: %d, %s", res.StatusCode, w.approval(t, id).Status)
	}
}
