package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// `chio approval batch create` signs the standing approval for the kernel
// it talks to (its kernel_key, GET /healthz), and with --kernel-key only
// for that kernel: a chiod answering with another key gets nothing.
func TestBatchCreateSignsForTheServersKernel(t *testing.T) {
	w := newApprovalWorld(t)
	kernelKey := w.k.PublicKey().String()
	create := func(extra ...string) (string, string, int) {
		args := append([]string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_*",
			"--for", "1h", "--output", "json"}, extra...)
		return w.run(adminEnv(), args...)
	}
	for _, extra := range [][]string{nil, {"--kernel-key", kernelKey}} {
		so, se, code := create(extra...)
		var res struct {
			Token struct {
				Audience string `json:"audience"`
			} `json:"token"`
		}
		if code != 0 || json.Unmarshal([]byte(so), &res) != nil || res.Token.Audience != kernelKey {
			t.Fatalf("create %v: exit %d, %s %s; want a token whose audience is %s", extra, code, so, se, kernelKey)
		}
	}

	other := keys.FromSeed([]byte("another-kernel-another-kernel-32")).Public().String()
	_, se, code := create("--kernel-key", other)
	if code != 1 || !strings.Contains(se, "is kernel "+kernelKey+", not --kernel-key "+other) {
		t.Fatalf("pinned to another kernel: exit %d, stderr %s", code, se)
	}
	if _, se, code := create("--kernel-key", "ed25519:nope"); code != 2 || !strings.Contains(se, "--kernel-key") {
		t.Fatalf("bad --kernel-key: exit %d, stderr %s", code, se)
	}
	if list, _, err := w.k.ListBatches("", 100); err != nil || len(list) != 2 {
		t.Fatalf("%d standing approvals stored (%v), want the 2 created, none from the refused runs", len(list), err)
	}
}
