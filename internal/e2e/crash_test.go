package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// TestKill9UnderLoad: every receipt the daemon acknowledged before a SIGKILL
// is present after restart and verifies; the log has no holes.
func TestKill9UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test builds and kills a daemon")
	}
	work := t.TempDir()
	config := filepath.Join(repoRoot(), "examples", "policies", "quickstart.toml")
	dataDir := filepath.Join(work, "data")
	d := startDaemon(t, config, dataDir)
	a := newAgent(t, d, "echo")

	var mu sync.Mutex
	acked := map[string]string{} // receipt id → request id
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil {
				id := "req-k9-" + time.Now().Format("150405.000000") + "-" + string(rune('a'+w)) + "-" + strconv.FormatInt(n.Add(1), 10)
				code, out, err := postCall(ctx, client, d.url, a.call(t, id, "demo", "echo", `{"n":1}`, ""))
				if err != nil || code != 200 {
					continue // in-flight at the kill: not acknowledged
				}
				mu.Lock()
				acked[out.ReceiptID] = id
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	d.kill9()
	cancel()
	wg.Wait()
	if len(acked) < 100 {
		t.Fatalf("only %d calls acknowledged before the kill; load too light to mean anything", len(acked))
	}

	d2 := startDaemon(t, config, dataDir)
	var health struct {
		KernelKey string `json:"kernel_key"`
	}
	d2.do(t, "GET", "/healthz", nil, &health)
	kk, _ := keys.ParsePublicKey(health.KernelKey)
	var raw map[string]any
	for id := range acked {
		if code := d2.do(t, "GET", "/v1/receipts/"+id, nil, &raw); code != 200 {
			t.Fatalf("acknowledged receipt %s lost after kill -9 (status %d)", id, code)
		}
	}
	// Verify every stored receipt's signature and that seqs have no holes.
	var page struct {
		Receipts   []jsonRaw `json:"receipts"`
		NextCursor string    `json:"next_cursor"`
	}
	seq := uint64(0)
	cursor := ""
	for {
		path := "/v1/receipts?limit=1000"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		page.Receipts, page.NextCursor = nil, ""
		d2.do(t, "GET", path, nil, &page)
		for _, r := range page.Receipts {
			rc, err := receipt.Verify(r, kk)
			if err != nil {
				t.Fatal(err)
			}
			seq++
			if rc.Seq != seq {
				t.Fatalf("hole in the log: seq %d after %d", rc.Seq, seq-1)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if seq < uint64(len(acked)) {
		t.Fatalf("%d receipts stored, %d acknowledged", seq, len(acked))
	}
	t.Logf("%d acknowledged before kill -9; %d receipts after restart, all verified", len(acked), seq)
}

type jsonRaw = json.RawMessage
