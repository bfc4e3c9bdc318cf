package toolserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/sdk/toolserver"
)

// The package doc says a key whose earlier delivery was cut off by a crash
// of the tool server is answered 409 "outcome unknown" and not run again.
// The effect DID happen. chiod must then report the call's execution as
// "unknown" (it may have run), never "tool_error", which the agent docs
// define as "it ran and reported a failure" — an agent reading that as
// "no refund was made" retries under a new id and pays twice.
//
// The tool server below performs the effect, then crashes before its
// answer is recorded (its record file closed, the connection dropped) and
// restarts on the same file. chiod (a real kernel, real HTTP dispatch,
// at_least_once) re-sends the call; Dedupe answers 409.
func TestCrashInterruptedKeyIsSettledUnknown(t *testing.T) {
	url, effects := reopeningToolServer(t, true)
	rec := refundThroughChiod(t, url)
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects = %d, want exactly 1", n)
	}
	if rec.Attempts < 2 {
		t.Fatalf("only %d attempt(s): the scenario did not re-deliver", rec.Attempts)
	}
	if rec.Execution != kernel.ExecutionUnknown {
		t.Fatalf("the refund WAS paid once (the first delivery ran, then the tool server crashed; Dedupe answered the re-delivery 409 \"outcome unknown\"), "+
			"yet chiod settles the call execution=%q (\"the tool ran and reported a failure\"); want %q", rec.Execution, kernel.ExecutionUnknown)
	}
}

// When the tool server cannot record an answer (its record file fails
// under the handler), Dedupe answers 502, not the handler's answer and not
// a status chiod reads as "not run" or "ran and failed". chiod (a real
// kernel, real HTTP dispatch, at_least_once) re-sends; the key is still in
// progress, so the repeat is answered 409 and not run; the call is settled
// "unknown" with the effect done exactly once.
func TestUnrecordedAnswerIsSettledUnknown(t *testing.T) {
	url, effects := reopeningToolServer(t, false)
	rec := refundThroughChiod(t, url)
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects = %d, want exactly 1", n)
	}
	if rec.Execution != kernel.ExecutionUnknown {
		t.Fatalf("the refund was paid but its answer could not be recorded; chiod settled execution=%q, want %q", rec.Execution, kernel.ExecutionUnknown)
	}
}

// refundThroughChiod submits one refund through a real kernel and HTTP
// dispatch (at_least_once, so chiod re-sends after a lost answer) to the
// tool server at url, and returns the settled call.
func refundThroughChiod(t *testing.T, url string) *kernel.CallRecord {
	t.Helper()
	w := testkit.NewWorld(t, testkit.Options{
		Server: "pay",
		PolicyTOML: fmt.Sprintf(`
[[servers]]
id = "pay"
transport = "http"
url = %q
delivery = "at_least_once"
retry_deadline_seconds = 20
[[servers.tools]]
name = "refund"

[[grants]]
id = "g"
server = "pay"
tool = "refund"
`, url),
		Grants: []string{"g"},
	})
	out := w.Submit(t, "refund", `{"amount":450}`, "")
	rec, err := w.Kernel.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status=%s execution=%s attempts=%d tool_error=%q", rec.Status, rec.Execution, rec.Attempts, rec.ToolError)
	return rec
}

// reopeningToolServer serves a refund handler behind Dedupe. Its first
// delivery pays, then loses the record file under the handler: Dedupe's
// file is closed and the server carries on with a fresh Dedupe on the same
// file for later requests. With crash, the first delivery then dies too
// (the connection dropped, nothing answered); without, it answers, and
// Dedupe cannot record the answer. It returns the URL and the effects.
func reopeningToolServer(t *testing.T, crash bool) (string, *atomic.Int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.db")
	effects := new(atomic.Int64)
	var (
		mu      sync.Mutex
		current http.Handler
		d1, d2  *toolserver.Dedupe
	)
	paid := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1)
		fmt.Fprint(w, `{"paid":true}`)
	})
	first := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1) // the refund is paid
		mu.Lock()
		if d2 == nil {
			d1.Close()
			var err error
			if d2, err = toolserver.Open(path, toolserver.Options{}); err != nil {
				mu.Unlock()
				t.Error(err)
				return
			}
			current = d2.Wrap(paid)
		}
		mu.Unlock()
		if crash {
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, `{"paid":true}`)
	})
	var err error
	if d1, err = toolserver.Open(path, toolserver.Options{}); err != nil {
		t.Fatal(err)
	}
	current = d1.Wrap(first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := current
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		if d2 != nil {
			d2.Close()
		}
	})
	return srv.URL, effects
}
