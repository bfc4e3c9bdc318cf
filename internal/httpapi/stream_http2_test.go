package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Over HTTP/2 (chiod serving TLS) a write deadline left set on a stream
// resets that stream when it passes, even while nothing is being written.
// An approvals stream quiet for longer than its write timeout (here 200
// ms; keepalives come every 15 s) must stay open and carry the next event.
func TestQuietStreamOverHTTP2OutlivesItsWriteTimeout(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(streamPolicy, keyAlice.Public()),
		Dispatcher: &argsDispatcher{}, Server: "pay", Grants: []string{"bulk"}})
	api, err := httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: approvalsAdmin,
		ReadToken: approvalsReader, StreamWriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() { api.CloseStreams(); srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := openStream(t, ctx, srv.Client(), srv.URL, withBearer(approvalsReader))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("stream over HTTP/2: %d %s", resp.StatusCode, resp.Proto)
	}
	lines := make(chan string, 64)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		ended <- sc.Err()
	}()
	time.Sleep(1 * time.Second) // five write timeouts with nothing to send
	out := w.Submit(t, "bulk", `{"blob":"x"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending, got %+v", out)
	}
	for {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, out.ApprovalRequestID) {
				return
			}
		case err := <-ended:
			t.Fatalf("the stream ended while quiet (err %v): a write deadline left set reset it", err)
		case <-ctx.Done():
			t.Fatal("no event within 10 s")
		}
	}
}
