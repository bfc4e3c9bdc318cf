package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder records the write deadline in force at each write, as
// a connection would apply it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadline time.Time   // the last one set
	atWrite  []time.Time // the deadline in force at each WriteHeader and Write
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error { d.deadline = t; return nil }
func (d *deadlineRecorder) WriteHeader(code int) {
	d.atWrite = append(d.atWrite, d.deadline)
	d.ResponseRecorder.WriteHeader(code)
}
func (d *deadlineRecorder) Write(p []byte) (int, error) {
	d.atWrite = append(d.atWrite, d.deadline)
	return d.ResponseRecorder.Write(p)
}

// Every writer of a non-stream answer sets the server's write timeout as
// the deadline before its first byte, counted from the moment it writes.
func TestEveryAnswerWriterSetsTheWriteDeadlineFirst(t *testing.T) {
	const timeout = 3 * time.Second
	writers := map[string]func(http.ResponseWriter){
		"writeJSON": func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, map[string]string{"a": "b"}) },
		"writeErr":  func(w http.ResponseWriter) { writeErr(w, apiErr(http.StatusNotFound, CodeNotFound, "x")) },
		"writeRaw":  func(w http.ResponseWriter) { writeRaw(w, []byte(`{"a":"b"}`)) },
		"bounded": func(w http.ResponseWriter) {
			bounded(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("metrics")) })).
				ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		},
	}
	for name, write := range writers {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		before := time.Now()
		write(&timedWriter{ResponseWriter: rec, timeout: timeout})
		after := time.Now()
		if len(rec.atWrite) == 0 || rec.Body.Len() == 0 {
			t.Fatalf("%s wrote nothing", name)
		}
		for i, d := range rec.atWrite {
			if d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
				t.Fatalf("%s: write %d under deadline %v, want now+%v (%v..%v)", name, i, d, timeout, before.Add(timeout), after.Add(timeout))
			}
		}
	}
}

// A writer that did not come through ServeHTTP still gets a deadline: the
// default StreamWriteTimeout.
func TestAnswerWriterWithoutServerGetsTheDefaultDeadline(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	before := time.Now()
	writeJSON(rec, http.StatusOK, "x")
	if len(rec.atWrite) == 0 || rec.atWrite[0].Before(before.Add(StreamWriteTimeout)) {
		t.Fatalf("deadlines at writes %v, want ≥ %v", rec.atWrite, before.Add(StreamWriteTimeout))
	}
}
