package dispatch

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A delivery error becomes the receipt's tool_error: signed, kept for
// ever in the log, shown to the agent and to every reader and exported. A
// tool server's URL may carry a credential (a password in its userinfo, a
// key in its query, as the webhook channel allows for), so the error must
// say what failed without repeating the URL.
func TestHTTPDeliveryErrorsDoNotRepeatTheURL(t *testing.T) {
	const secret = "s3cret-tool-key"
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>not json</html>"))
	}))
	defer notJSON.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there any more: connection refused

	for name, tc := range map[string]struct{ url, why string }{
		"invalid JSON, password": {"http://chio:" + secret + "@" + strings.TrimPrefix(notJSON.URL, "http://") + "/call", "not valid JSON"},
		"invalid JSON, query":    {notJSON.URL + "/call?key=" + secret, "not valid JSON"},
		"refused, query":         {"http://" + closed + "/call?key=" + secret, "refused"},
	} {
		r := newTestRouter(t, httpServer("billing", tc.url))
		_, err := r.Dispatch(context.Background(), kernel.DispatchRequest{
			RequestID: "req-1", Server: "billing", Tool: "refund", Arguments: json.RawMessage(`{}`),
		})
		if err == nil {
			t.Fatalf("%s: Dispatch succeeded, want an error", name)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the delivery error repeats the tool server's credential: %v", name, err)
		}
		if !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: the delivery error does not say what failed (%s): %v", name, tc.why, err)
		}
	}
}
