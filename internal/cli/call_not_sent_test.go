package cli_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// freeURL is a loopback URL nothing listens on: every dial is refused.
func freeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// The commonest first-run mistake — chiod not started, or CHIO_URL wrong —
// refuses every connection: nothing was sent, so chio call says so instead
// of "the call may have run; its outcome is unknown" with a request id to
// retry or await that chiod never saw.
func TestCallToNoChiodSaysNothingWasSent(t *testing.T) {
	url := freeURL(t)
	_, se, code := chio(inflightAgent(t, url), "call", "demo", "echo", "--args", `{}`)
	if code != cli.ExitError || strings.Contains(se, "may have run") || !strings.Contains(se, "connection refused") ||
		!strings.Contains(se, "the call was not sent: is chiod running at "+url+"?") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 saying the call was not sent", code, se)
	}
}

// Refused connections after an attempt whose answer was lost do not make
// the outcome known: that first attempt reached chiod and may have run the
// call, so chio call still names the request id to retry or await.
func TestCallLostThenRefusedConnectionsStillNamesItsRequestID(t *testing.T) {
	var hits atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		srv.Listener.Close()        // every later attempt is refused
		panic(http.ErrAbortHandler) // and this one's answer is lost
	}))
	t.Cleanup(srv.Close)
	_, se, code := chio(inflightAgent(t, srv.URL), "call", "demo", "echo", "--args", `{}`)
	if hits.Load() != 1 || code != cli.ExitError || !strings.Contains(se, "may have run") ||
		!strings.Contains(se, "--request-id req-") || strings.Contains(se, "was not sent") {
		t.Fatalf("%d requests reached the server; exit %d, stderr:\n%s\nwant exit 1 naming the request id", hits.Load(), code, se)
	}
}
