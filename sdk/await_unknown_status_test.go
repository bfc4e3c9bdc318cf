package chio_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	chio "github.com/chiokernel/chio/sdk"
)

// An answer to GET /v1/calls/{id} with a status chiod never sends (a
// newer chiod, a proxy's rewritten or empty JSON body) is neither final
// nor pending. Await must fail at once with a clear error, as Status does,
// not poll again in a tight loop until the context ends (forever under
// context.Background()), hammering chiod and never returning.
func TestAwaitUnknownStatusFailsAtOnce(t *testing.T) {
	for _, body := range []string{`{"status":"paused","request_id":"req-x"}`, `{}`} {
		var gets atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			gets.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}))
		c, err := chio.NewClient(srv.URL, chio.WithBearer("reader-token"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		res, err := c.Await(ctx, "req-x")
		took := time.Since(start)
		cancel()
		srv.Close()
		if err == nil {
			t.Fatalf("%s: Await returned %#v", body, res)
		}
		if errors.Is(err, chio.ErrTimedOut) || took > time.Second || gets.Load() > 1 {
			t.Errorf("%s: Await polled %d times for %v and ended with %v; want an unknown-status error at once", body, gets.Load(), took, err)
		}
		if !strings.Contains(err.Error(), "status") {
			t.Errorf("%s: error %v does not name the status", body, err)
		}
	}
}
