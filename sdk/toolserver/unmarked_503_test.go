package toolserver_test

import (
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// A handler's 503 without Chio-Not-Run: true is, by chio's contract, "may
// have run" (a downstream that failed after the effect, a proxy in front of
// it): chio re-sends the call with the same key. Dedupe must not forget the
// key then, or the repeat runs the effect a second time.
func TestUnmarked503IsNotForgotten(t *testing.T) {
	var effects atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1) // the effect happened ...
		// ... and then something downstream failed; the handler does not
		// claim that nothing ran.
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, h)
	if st, _, _ := post(t, url, "req-503", `{}`); st != http.StatusServiceUnavailable {
		t.Fatalf("first delivery: %d", st)
	}
	// chio reads that 503 as "may have run" and re-sends the same key.
	post(t, url, "req-503", `{}`)
	if n := effects.Load(); n != 1 {
		t.Fatalf("a 503 without %s: true was forgotten and the key ran %d times", toolserver.NotRunHeader, n)
	}
}
