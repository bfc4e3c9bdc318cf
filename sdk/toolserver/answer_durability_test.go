package toolserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// observer stands for the client: Dedupe writes to its ResponseWriter,
// and it notes what the key's record held at the moment the first byte of
// an answer was handed to net/http (from then on net/http may send it).
// The record is read through Dedupe's own database handle, so the check is
// exact and needs no timing.
type observer struct {
	d   *Dedupe
	key string

	mu      sync.Mutex
	wrote   bool
	atFirst *record // the key's record when the first byte went out; nil if none
}

func (o *observer) first() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.wrote {
		o.wrote, o.atFirst = true, readRecord(o.d, o.key)
	}
}

// seen is whether anything was sent, and the record at that moment.
func (o *observer) seen() (bool, *record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.wrote, o.atFirst
}

// clientSide is the observed ResponseWriter of one request.
type clientSide struct {
	http.ResponseWriter
	o *observer
}

func (c *clientSide) WriteHeader(code int) { c.o.first(); c.ResponseWriter.WriteHeader(code) }
func (c *clientSide) Write(p []byte) (int, error) {
	c.o.first()
	return c.ResponseWriter.Write(p)
}

// readRecord is the key's record as stored, or nil.
func readRecord(d *Dedupe, key string) *record {
	var out *record
	_ = d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketKeys).Get([]byte(key)); v != nil {
			out = new(record)
			if err := json.Unmarshal(v, out); err != nil {
				panic(err)
			}
		}
		return nil
	})
	return out
}

// serveObserved serves h through d, with the client side observed.
func serveObserved(t *testing.T, d *Dedupe, key string, h http.Handler) (*observer, string) {
	t.Helper()
	obs := &observer{d: d, key: key}
	wrapped := d.Wrap(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrapped.ServeHTTP(&clientSide{ResponseWriter: w, o: obs}, r)
	}))
	t.Cleanup(srv.Close)
	return obs, srv.URL
}

func openDedupe(t *testing.T, path string) *Dedupe {
	t.Helper()
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func send(t *testing.T, url, key string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":5}`))
	req.Header.Set(IdempotencyKeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// writeInChunks writes n bytes of 'x' in 4 KiB writes, as a handler
// streaming a report would.
func writeInChunks(w io.Writer, n int) {
	chunk := bytes.Repeat([]byte("x"), 4096)
	for n > 0 {
		c := min(n, len(chunk))
		if _, err := w.Write(chunk[:c]); err != nil {
			return
		}
		n -= c
	}
}

// An answer larger than net/http's response buffer must not reach the
// client before the key's "done" record is durable: otherwise a crash of
// the tool server in between leaves the key in_progress, and a repeat of a
// call the client saw succeed is answered 409 "outcome unknown".
func TestAnswerIsRecordedBeforeTheClientGetsIt(t *testing.T) {
	d := openDedupe(t, filepath.Join(t.TempDir(), "keys.db"))
	const size = 64 << 10
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Report", "monthly")
		w.WriteHeader(http.StatusCreated)
		writeInChunks(w, size)
	})
	obs, url := serveObserved(t, d, "k-big", h)
	resp, body, err := send(t, url, "k-big")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || len(body) != size || resp.Header.Get("X-Report") != "monthly" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer: %d, %d bytes, headers %v", resp.StatusCode, len(body), resp.Header)
	}
	_, at := obs.seen()
	if at == nil || at.State != "done" {
		t.Fatalf("the client got the answer while the key's record was %+v; want it durably done first", stateOf(at))
	}
	if at.Status != http.StatusCreated || !bytes.Equal(at.Body, body) {
		t.Fatalf("record at send: status %d, %d bytes; want what the client got", at.Status, len(at.Body))
	}
}

// An answer too large to keep is recorded "done, too large to replay"
// (410 for a repeat) before its first byte goes out, then streamed whole.
func TestTooLargeAnswerIsRecordedBeforeItIsStreamed(t *testing.T) {
	d := openDedupe(t, filepath.Join(t.TempDir(), "keys.db"))
	size := MaxRecordedBody + 64<<10
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		writeInChunks(w, size)
	})
	obs, url := serveObserved(t, d, "k-huge", h)
	resp, body, err := send(t, url, "k-huge")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(body) != size {
		t.Fatalf("answer: %d, %d bytes", resp.StatusCode, len(body))
	}
	_, at := obs.seen()
	if at == nil || at.State != "done" || at.Status != http.StatusGone {
		t.Fatalf("the client got the answer while the key's record was %+v; want done/410 first", stateOf(at))
	}
	if resp, _, err := send(t, url, "k-huge"); err != nil || resp.StatusCode != http.StatusGone || runs.Load() != 1 {
		t.Fatalf("repeat: %v %v, %d runs", resp, err, runs.Load())
	}
}

// If the answer cannot be recorded, the handler's answer is not sent as if
// all were well: the client gets 502 (chio reads it "may have run", never
// "not run" nor "ran and failed"), and the key stays in progress so a
// repeat is answered 409 and never run again.
func TestUnrecordableAnswerIsNotSent(t *testing.T) {
	for _, size := range []int{100, MaxRecordedBody + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.db")
			d, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				d.Close() // the record file fails under the handler
				w.Header().Set("X-Paid", "yes")
				fmt.Fprint(w, `{"paid":true}`)
				writeInChunks(w, size)
			})
			srv := httptest.NewServer(d.Wrap(h))
			defer srv.Close()
			resp, body, err := send(t, srv.URL, "k-fail")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadGateway || bytes.Contains(body, []byte("paid")) || resp.Header.Get("X-Paid") != "" {
				t.Fatalf("answer with an unrecorded outcome: %d %q %v", resp.StatusCode, clip(body), resp.Header)
			}
			d2 := openDedupe(t, path)
			srv2 := httptest.NewServer(d2.Wrap(h))
			defer srv2.Close()
			if resp, _, err := send(t, srv2.URL, "k-fail"); err != nil || resp.StatusCode != http.StatusConflict || runs.Load() != 1 {
				t.Fatalf("repeat: %v %v, %d runs", resp, err, runs.Load())
			}
		})
	}
}

// A 429, or a 503 with Chio-Not-Run: true, from the handler ran nothing:
// the key is forgotten before the refusal is sent, so a repeat right after
// it runs the handler.
func TestRefusalForgetsTheKeyBeforeItIsSent(t *testing.T) {
	d := openDedupe(t, filepath.Join(t.TempDir(), "keys.db"))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set(NotRunHeader, "true")
		w.WriteHeader(http.StatusServiceUnavailable)
		writeInChunks(w, 64<<10)
	})
	obs, url := serveObserved(t, d, "k-busy", h)
	resp, _, err := send(t, url, "k-busy")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("refusal: %d %v", resp.StatusCode, resp.Header)
	}
	sent, at := obs.seen()
	if !sent || at != nil {
		t.Fatalf("the refusal went out while the key's record was %+v; want it forgotten first", stateOf(at))
	}
}

// A handler that dies mid-answer sends nothing: the client sees a dropped
// connection, never part of an answer, and the key stays in progress.
func TestAbortedHandlerSendsNothing(t *testing.T) {
	d := openDedupe(t, filepath.Join(t.TempDir(), "keys.db"))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeInChunks(w, 64<<10)
		panic(http.ErrAbortHandler)
	})
	obs, url := serveObserved(t, d, "k-abort", h)
	if resp, _, err := send(t, url, "k-abort"); err == nil {
		t.Fatalf("a dead handler's partial answer reached the client: %d", resp.StatusCode)
	}
	sent, _ := obs.seen()
	if sent {
		t.Fatal("part of a dead handler's answer was handed to the client")
	}
	if rec := readRecord(d, "k-abort"); rec == nil || rec.State != "in_progress" {
		t.Fatalf("record: %+v", stateOf(rec))
	}
}

// The handler cannot reach the connection around the buffer: no Flusher,
// no Hijacker, nothing for http.ResponseController to unwrap.
func TestHandlerCannotFlushPastTheRecord(t *testing.T) {
	d := openDedupe(t, filepath.Join(t.TempDir(), "keys.db"))
	var (
		mu       sync.Mutex
		problems []string
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := w.(http.Flusher); ok {
			problems = append(problems, "Flusher")
		}
		if _, ok := w.(http.Hijacker); ok {
			problems = append(problems, "Hijacker")
		}
		if _, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
			problems = append(problems, "Unwrap")
		}
		fmt.Fprint(w, "partial")
		if err := http.NewResponseController(w).Flush(); !errors.Is(err, http.ErrNotSupported) {
			problems = append(problems, fmt.Sprintf("ResponseController.Flush: %v", err))
		}
		fmt.Fprint(w, " answer")
	})
	obs, url := serveObserved(t, d, "k-flush", h)
	resp, body, err := send(t, url, "k-flush")
	if err != nil {
		t.Fatal(err)
	}
	_, at := obs.seen()
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("the handler could bypass the buffer: %v", problems)
	}
	if resp.StatusCode != 200 || string(body) != "partial answer" || at == nil || at.State != "done" {
		t.Fatalf("%d %q, record at send %+v", resp.StatusCode, body, stateOf(at))
	}
}

func stateOf(rec *record) string {
	if rec == nil {
		return "absent"
	}
	return fmt.Sprintf("%s/%d", rec.State, rec.Status)
}

func clip(b []byte) []byte { return b[:min(len(b), 120)] }
