package toolserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// testClock is an injected clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recordKeys lists the keys the record file holds (d must be closed).
func recordKeys(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys []string
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("idempotency_keys")).ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	sort.Strings(keys)
	return keys
}

// Records were never pruned: the file grew with every key ever seen. With
// RetainFor set, a completed key older than the horizon is forgotten; a
// younger one is still replayed, and a key left in progress by a crash
// (outcome unknown) is never forgotten.
func TestRetainForForgetsCompletedKeysPastTheHorizon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	clock := &testClock{now: time.Unix(1_700_000_000, 0)}
	opts := toolserver.Options{RetainFor: time.Hour, Now: clock.Now}
	e := &effectServer{}
	d, err := toolserver.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(e))
	for _, k := range []string{"req-old-1", "req-old-2"} {
		if st, _, _ := post(t, srv.URL, k, `{}`); st != http.StatusOK {
			t.Fatalf("%s: %d", k, st)
		}
	}
	srv.Close()
	d.Close()
	// A key left in progress by a crash of the tool server, as old.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(map[string]any{"state": "in_progress", "fingerprint": "x", "at": clock.Now().Unix()})
		return tx.Bucket([]byte("idempotency_keys")).Put([]byte("req-crashed"), v)
	})
	db.Close()

	clock.add(50 * time.Minute)
	d, err = toolserver.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(d.Wrap(e))
	if st, body, _ := post(t, srv.URL, "req-young", `{}`); st != http.StatusOK || !strings.Contains(body, `"effect":3`) {
		t.Fatalf("req-young: %d %s", st, body)
	}
	clock.add(20 * time.Minute) // the first two are 70 minutes old, req-young 20
	if st, body, _ := post(t, srv.URL, "req-new", `{}`); st != http.StatusOK || !strings.Contains(body, `"effect":4`) {
		t.Fatalf("req-new: %d %s", st, body)
	}
	if st, _, h := post(t, srv.URL, "req-young", `{}`); st != http.StatusOK || h.Get(toolserver.ReplayedHeader) != "true" {
		t.Fatalf("a key inside the horizon is not replayed: %d", st)
	}
	srv.Close()
	d.Close()

	got := strings.Join(recordKeys(t, path), ",")
	if want := "req-crashed,req-new,req-young"; got != want {
		t.Fatalf("records kept: %s, want %s", got, want)
	}
	if e.effects.Load() != 4 {
		t.Fatalf("%d effects", e.effects.Load())
	}
}

// Without RetainFor nothing is forgotten, however old.
func TestZeroRetainForKeepsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	clock := &testClock{now: time.Unix(1_700_000_000, 0)}
	e := &effectServer{}
	d, err := toolserver.Open(path, toolserver.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(e))
	post(t, srv.URL, "req-a", `{}`)
	clock.add(365 * 24 * time.Hour)
	post(t, srv.URL, "req-b", `{}`)
	if _, _, h := post(t, srv.URL, "req-a", `{}`); h.Get(toolserver.ReplayedHeader) != "true" {
		t.Fatal("a year-old key ran again")
	}
	srv.Close()
	d.Close()
	if got := strings.Join(recordKeys(t, path), ","); got != "req-a,req-b" {
		t.Fatalf("records kept: %s", got)
	}
}

// A file written before the horizon existed (no index of completed keys)
// is indexed when opened, and its old records are forgotten too.
func TestRetainForIndexesAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	clock := &testClock{now: time.Unix(1_700_000_000, 0)}
	e := &effectServer{}
	d, err := toolserver.Open(path, toolserver.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(e))
	post(t, srv.URL, "req-a", `{}`)
	srv.Close()
	d.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("idempotency_done_at")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	clock.add(48 * time.Hour)
	d, err = toolserver.Open(path, toolserver.Options{RetainFor: 24 * time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got := recordKeys(t, path); len(got) != 0 {
		t.Fatalf("records kept: %v", got)
	}
}
