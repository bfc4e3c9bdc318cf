package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

const diskFullPolicy = `
[[servers]]
id = "tools"
transport = "http"
url = "%s"
timeout_seconds = 2
[[servers.tools]]
name = "pay"

[[grants]]
id = "pay"
server = "tools"
tool = "pay"
`

// TestDiskFull (issue 11, 1 and 6): chiod's data dir on a 16 MiB tmpfs that
// fills up. No call reaches the tool without a durable decision (the agent
// gets 503, and retries with the same id change nothing); /readyz answers
// 503 while /healthz stays 200; once space is freed the store heals by
// itself and the same request ids run exactly once.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs; run without -short")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root and mount permission): %v %s", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
	tool := newCountingTool(t)
	config := filepath.Join(dir, "diskfull.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(diskFullPolicy, tool.url)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config, filepath.Join(mnt, "data"))
	a := newAgent(t, d, "pay")
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()
	call := func(id string) int {
		code, _, err := postCall(ctx, client, d.url, a.call(t, id, "tools", "pay", `{"amount":1}`, ""))
		if err != nil {
			return 0
		}
		return code
	}
	if code := call("before-full"); code != 200 {
		t.Fatalf("before filling the disk: %d\n%s", code, d.log())
	}

	// Fill the file system, leaving the store nowhere to grow.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			break
		}
	}
	f.Close()

	// Calls until the store can no longer commit (bbolt first uses the free
	// pages it has), then a batch that must all be refused.
	var refused []string
	allowed := map[string]bool{}
	for i := 0; i < 5000 && len(refused) < 50; i++ {
		id := fmt.Sprintf("full-%d", i)
		switch code := call(id); code {
		case 200:
			allowed[id] = true
		case 500, 503:
			// 500 outcome_unknown: the commit that met the full disk failed,
			// and a commit reported failed may be durable; 503: refused by a
			// store already failed, nothing written.
			refused = append(refused, id)
		default:
			t.Fatalf("%s: unexpected %d", id, code)
		}
	}
	if len(refused) == 0 {
		t.Fatal("the store never refused a commit on a full disk")
	}
	for _, id := range refused { // the SDKs retry these with the same id
		for r := 0; r < 3; r++ {
			if code := call(id); code != 503 && code != 500 {
				t.Fatalf("retry of %s on a full disk: %d", id, code)
			}
		}
	}
	deliveries, _ := tool.snapshot()
	for _, id := range refused {
		if deliveries[id] != 0 {
			t.Fatalf("%s reached the tool %d times without a durable decision", id, deliveries[id])
		}
	}
	var health map[string]any
	if code := d.do(t, "GET", "/healthz", nil, &health); code != 200 {
		t.Fatalf("/healthz %d: the process is alive", code)
	}
	var ready struct {
		Status string `json:"status"`
		Store  string `json:"store"`
	}
	if code := d.do(t, "GET", "/readyz", nil, &ready); code != 503 || ready.Status != "unavailable" {
		t.Fatalf("/readyz on a full disk: %d %+v", code, ready)
	}

	// Free the space: the store heals by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.do(t, "GET", "/readyz", nil, &ready) != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("store did not heal after space was freed: %+v\n%s", ready, d.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range refused {
		if code := call(id); code != 200 {
			t.Fatalf("%s after healing: %d", id, code)
		}
	}
	deliveries, effects := tool.snapshot()
	for _, id := range refused {
		if deliveries[id] != 1 || effects[id] != 1 {
			t.Fatalf("%s after healing: %d deliveries, %d effects", id, deliveries[id], effects[id])
		}
	}
	for id := range allowed {
		var st kernel.Outcome
		if d.do(t, "GET", "/v1/calls/"+id, nil, &st); st.Status != kernel.StatusAllowed {
			t.Fatalf("%s, acknowledged before the disk filled: %s", id, st.Status)
		}
	}
	// The audit index, which trails the receipts and was caught up by the
	// store's reopen, counts one allow receipt per call that ran.
	var stats receipt.StatsResult
	if code := d.do(t, "GET", "/v1/receipts/stats?decision=allow&tool=pay", nil, &stats); code != 200 ||
		stats.Total != uint64(1+len(allowed)+len(refused)) {
		t.Fatalf("allow receipts counted after healing: %d (status %d), want %d", stats.Total, code, 1+len(allowed)+len(refused))
	}
	if out, errOut, code := d.chio(t, dir, "receipt", "verify", "--all"); code != 0 {
		t.Fatalf("verify --all after healing: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("%d calls committed before the disk filled, %d refused with 503 and never delivered; healed, each refused id then ran once",
		len(allowed), len(refused))
}
