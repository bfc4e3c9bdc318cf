package toolserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// effectServer counts effects; each request pays out and answers the total.
type effectServer struct {
	effects atomic.Int64
	gate    chan struct{} // if set, the handler waits on it
	status  int
}

func (e *effectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.gate != nil {
		<-e.gate
	}
	if e.status != 0 {
		w.WriteHeader(e.status)
		return
	}
	n := e.effects.Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"paid":true,"effect":%d,"key":%q}`, n, toolserver.Key(r))
}

func post(t *testing.T, url, key, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set(toolserver.IdempotencyKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func serve(t *testing.T, path string, opts toolserver.Options, h http.Handler) (*toolserver.Dedupe, string) {
	t.Helper()
	d, err := toolserver.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(h))
	t.Cleanup(func() { srv.Close(); d.Close() })
	return d, srv.URL
}

func TestOneEffectPerKey(t *testing.T) {
	e := &effectServer{}
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, e)
	body := `{"request_id":"req-1","tool":"pay","arguments":{"amount":5}}`
	st, first, _ := post(t, url, "req-1", body)
	if st != 200 || !strings.Contains(first, `"effect":1`) || !strings.Contains(first, `"key":"req-1"`) {
		t.Fatalf("%d %s", st, first)
	}
	for i := 0; i < 3; i++ {
		st, again, h := post(t, url, "req-1", body)
		if st != 200 || again != first || h.Get(toolserver.ReplayedHeader) != "true" {
			t.Fatalf("replay %d: %d %s", i, st, again)
		}
	}
	if e.effects.Load() != 1 {
		t.Fatalf("%d effects", e.effects.Load())
	}
	// Same key, other content: refused, no effect.
	if st, _, _ := post(t, url, "req-1", `{"request_id":"req-1","tool":"pay","arguments":{"amount":9}}`); st != http.StatusUnprocessableEntity {
		t.Fatalf("reused key: %d", st)
	}
	// No key: refused.
	if st, _, _ := post(t, url, "", body); st != http.StatusBadRequest {
		t.Fatalf("no key: %d", st)
	}
	if e.effects.Load() != 1 {
		t.Fatalf("%d effects", e.effects.Load())
	}
}

func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	e := &effectServer{gate: make(chan struct{})}
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, e)
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, _ := post(t, url, "req-c", `{}`)
			codes <- st
		}()
	}
	time.Sleep(100 * time.Millisecond) // duplicates arrive while the first runs
	close(e.gate)
	wg.Wait()
	close(codes)
	for st := range codes {
		if st != http.StatusOK && st != http.StatusServiceUnavailable {
			t.Fatalf("duplicate answered %d", st)
		}
	}
	if e.effects.Load() != 1 {
		t.Fatalf("%d effects for one key", e.effects.Load())
	}
}

func TestSurvivesRestartAndRefusesInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	e := &effectServer{}
	d, err := toolserver.Open(path, toolserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(e))
	_, first, _ := post(t, srv.URL, "req-r", `{}`)
	srv.Close()
	d.Close()
	// A key left in progress by a crash of the tool server.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	fp := ""
	_ = db.View(func(tx *bolt.Tx) error {
		var rec map[string]any
		_ = json.Unmarshal(tx.Bucket([]byte("idempotency_keys")).Get([]byte("req-r")), &rec)
		fp = rec["fingerprint"].(string)
		return nil
	})
	_ = db.Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(map[string]any{"state": "in_progress", "fingerprint": fp, "at": 1})
		return tx.Bucket([]byte("idempotency_keys")).Put([]byte("req-crashed"), v)
	})
	db.Close()

	_, url := serve(t, path, toolserver.Options{}, e)
	if _, again, _ := post(t, url, "req-r", `{}`); again != first {
		t.Fatalf("after restart: %s, want %s", again, first)
	}
	if st, msg, _ := post(t, url, "req-crashed", `{}`); st != http.StatusConflict || !strings.Contains(msg, "interrupted") {
		t.Fatalf("interrupted key: %d %s", st, msg)
	}
	if e.effects.Load() != 1 {
		t.Fatalf("%d effects", e.effects.Load())
	}
}

func TestRetryLaterIsNotRecorded(t *testing.T) {
	e := &effectServer{status: http.StatusServiceUnavailable}
	// The handler's 503 says it ran nothing (unmarked_503_test.go: a 503
	// without the header is recorded).
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.status == http.StatusServiceUnavailable {
			w.Header().Set(toolserver.NotRunHeader, "true")
		}
		e.ServeHTTP(w, r)
	})
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, h)
	if st, _, _ := post(t, url, "req-b", `{}`); st != http.StatusServiceUnavailable {
		t.Fatalf("%d", st)
	}
	e.status = 0
	if st, body, _ := post(t, url, "req-b", `{}`); st != 200 || !strings.Contains(body, `"effect":1`) {
		t.Fatalf("after the busy answer: %d %s", st, body)
	}
}
