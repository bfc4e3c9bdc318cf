package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// `chio receipt list` reads each suspension's approval status to fill its
// STATUS column; when that read fails it says so on stderr and goes on.
// That line printed the error raw, and the error quotes the answer: a
// proxy's error page, or chiod's message, holding an escape sequence
// cleared the screen and printed what it liked above the table, where
// every other chio error is escaped (fail). Here the answer erases the
// line and writes "0 receipts" in its place.
func TestReceiptListStatusErrorIsEscaped(t *testing.T) {
	w := newAuditWorld(t)
	target, _ := url.Parse(w.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/approvals/") {
			rw.WriteHeader(http.StatusBadGateway)
			rw.Write([]byte("upstream down\x1b[2K\r\x1b[1A\x1b[2Kchio: 0 receipts"))
			return
		}
		proxy.ServeHTTP(rw, r)
	}))
	defer front.Close()
	out, errOut, code := chioAt(front.URL, "receipt", "list", "--kernel-key", w.kernelKey.String(),
		"--decision", "incomplete", "--meta", "approval_request_id")
	if code != 0 || !strings.Contains(errOut, "cannot read approval status") {
		t.Fatalf("exit %d; stderr does not say the status could not be read:\n%s\n%s", code, out, errOut)
	}
	if terminalActive(out + errOut) {
		t.Fatalf("receipt list printed the server's answer raw on stderr:\n%q", errOut)
	}
}
