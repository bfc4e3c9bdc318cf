package toolserver_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// An answer larger than MaxRecordedBody is not a crash: a repeat of the
// key never runs the handler again (it used to with RerunInterrupted) and
// is not told a crash cut it off (409); it is answered 410 Gone, saying
// the delivery completed and its answer is not kept.
func TestLargeAnswerIsNotACrash(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		var effects atomic.Int64
		big := bytes.Repeat([]byte("x"), toolserver.MaxRecordedBody+1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			effects.Add(1)
			w.Write(big)
		})
		_, url := serve(t, filepath.Join(t.TempDir(), "d.db"), toolserver.Options{RerunInterrupted: rerun}, h)
		if code, _, _ := post(t, url, "k1", `{"a":1}`); code != 200 {
			t.Fatalf("first: %d", code)
		}
		code, body, _ := post(t, url, "k1", `{"a":1}`)
		if n := effects.Load(); n != 1 {
			t.Errorf("RerunInterrupted=%v: the handler ran %d times for one key with no crash (second answer %d)", rerun, n, code)
		}
		if code != http.StatusGone || !strings.Contains(body, "completed") {
			t.Errorf("RerunInterrupted=%v: the repeat of a completed delivery: %d %.120s", rerun, code, body)
		}
	}
}
