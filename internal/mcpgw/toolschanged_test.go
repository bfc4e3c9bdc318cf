package mcpgw

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
)

// syncingGoroutines counts the goroutines that are re-offering tools after
// a change (Gateway.ToolsChanged's), started or waiting to.
func syncingGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "mcpgw.(*Gateway).ToolsChanged") || strings.Contains(g, "mcpgw.(*agentServer).sync(") {
			n++
		}
	}
	return n
}

// Every change to an upstream's list (each notifications/tools/list_changed
// an upstream sends) and every policy reload calls ToolsChanged, which
// re-offers every agent's tools. It started a goroutine per call, each
// waiting for the agents' locks while an earlier one synced: an upstream
// that keeps changing its list while syncs are slow piles goroutines up
// without bound. Changes that arrive while a sync runs are one more sync
// at most.
func TestToolsChangedDoesNotPileUpSyncs(t *testing.T) {
	w := newPolicyToolsWorld(t, `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`, []string{"echo"})
	g, err := New(Options{Kernel: w.Kernel, Catalog: w.router.MCP()})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{capRaw: w.CapRaw, cap: w.Cap, subject: w.Agent.Public()}
	as := newAgentServer(g, a)
	g.agents[a.id()] = as

	hold, entered := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	afterGranted = func() {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-hold // a slow sync
		}
	}
	g.ToolsChanged("demo")
	<-entered
	for range 50 {
		g.ToolsChanged("demo")
	}
	n := syncingGoroutines()
	close(hold)
	mcptest.Eventually(t, 20*time.Second, "the syncs to end", func() bool { return syncingGoroutines() == 0 })
	as.mu.Lock() // every sync read the hook under it
	afterGranted = func() {}
	as.mu.Unlock()
	if n > 2 {
		t.Fatalf("51 changes during one slow sync left %d goroutines syncing or waiting to", n)
	}
}
