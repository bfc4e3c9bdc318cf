package mcpgw

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

type bridgeSyncMark struct{}

// The bridge re-lists chiod's tools on every list_changed, each in its own
// goroutine. The list it offers at the end is the newest it was sent: a
// sync that fetched its list before a policy reload withdrew a tool, and
// applies it after a later sync applied the newer list, must not offer
// the withdrawn tool again.
func TestBridgeOverlappingSyncsEndWithTheNewestList(t *testing.T) {
	const servers = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`
	const files = `
[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
`
	w := newPolicyToolsWorld(t, servers+files, []string{"echo", "files"})
	without, err := policy.Parse([]byte(servers), "reloaded.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)

	// The first sync has fetched the old list when the reload lands; a
	// newer sync fetches and applies the new one then. Syncs the bridge
	// starts on its own (chiod's list_changed) wait until the end, so
	// that only these two decide what is offered.
	release := make(chan struct{})
	t.Cleanup(func() { afterBridgeListed.Store(nil) })
	hook := func(ctx context.Context) {
		switch ctx.Value(bridgeSyncMark{}) {
		case "first":
			w.Kernel.SetPolicy(without)
			if err := b.syncTools(context.WithValue(ctx, bridgeSyncMark{}, "newer")); err != nil {
				t.Error(err)
			}
		case "newer":
		default:
			<-release
		}
	}
	afterBridgeListed.Store(&hook)
	if err := b.syncTools(context.WithValue(ctx, bridgeSyncMark{}, "first")); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	var got []string
	for name := range b.targets {
		got = append(got, name)
	}
	b.mu.Unlock()
	close(release)
	slices.Sort(got)
	if want := []string{AwaitTool, "demo__echo"}; !slices.Equal(got, want) {
		t.Fatalf("after the reload the bridge offers %v; chiod offers %v", got, want)
	}
}
