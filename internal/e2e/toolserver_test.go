package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// countingTool is an HTTP tool server that counts, per Idempotency-Key,
// every delivery it receives (before deduplication) and every effect it
// performs (after). Tools named in atMostOnce are not deduplicated: each
// delivery is an effect, so a re-send shows up as a double execution.
type countingTool struct {
	mu         sync.Mutex
	deliveries map[string]int
	effects    map[string]int
	atMostOnce map[string]bool
	url        string
}

func newCountingTool(t *testing.T, atMostOnce ...string) *countingTool {
	t.Helper()
	c := &countingTool{deliveries: map[string]int{}, effects: map[string]int{}, atMostOnce: map[string]bool{}}
	for _, name := range atMostOnce {
		c.atMostOnce[name] = true
	}
	d, err := toolserver.Open(filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	effect := http.HandlerFunc(c.effect)
	deduped := d.Wrap(effect)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(toolserver.IdempotencyKeyHeader)
		var body struct {
			Tool string `json:"tool"`
		}
		// Peek at the tool name, then hand the body on unchanged.
		data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(data))
		_ = json.Unmarshal(data, &body)
		c.mu.Lock()
		c.deliveries[key]++
		c.mu.Unlock()
		if c.atMostOnce[body.Tool] {
			effect(w, r)
			return
		}
		deduped.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); d.Close() })
	c.url = srv.URL
	return c
}

func (c *countingTool) effect(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(toolserver.IdempotencyKeyHeader)
	c.mu.Lock()
	c.effects[key]++
	n := c.effects[key]
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"done":%q,"effect":%d}`, key, n)
}

// snapshot copies the counters.
func (c *countingTool) snapshot() (deliveries, effects map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	deliveries, effects = map[string]int{}, map[string]int{}
	for k, v := range c.deliveries {
		deliveries[k] = v
	}
	for k, v := range c.effects {
		effects[k] = v
	}
	return deliveries, effects
}
