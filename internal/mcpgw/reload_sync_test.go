package mcpgw

import (
	"slices"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// Two policy reloads in quick succession each sync the agent's tool list
// in their own goroutine (Gateway.ToolsChanged). The list offered at the
// end is the newest policy's, whichever sync reads what is granted first:
// an older sync must not apply its stale list after a newer one.
func TestOverlappingSyncsEndWithTheNewestPolicysTools(t *testing.T) {
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
	g, err := New(Options{Kernel: w.Kernel, Catalog: w.router.MCP()})
	if err != nil {
		t.Fatal(err)
	}
	as := newAgentServer(g, &agent{capRaw: w.CapRaw, cap: w.Cap, subject: w.Agent.Public()})

	// The first sync has read the old policy's grants when the reload
	// lands; the reload's own sync runs then, at once if it can.
	newer := make(chan struct{})
	first := true
	afterGranted = func() {
		if !first {
			return
		}
		first = false
		w.Kernel.SetPolicy(without)
		go func() { as.sync(); close(newer) }()
		if as.mu.TryLock() { // the first sync holds nothing: let the newer one finish first
			as.mu.Unlock()
			<-newer
		}
	}
	t.Cleanup(func() { afterGranted = func() {} })
	as.sync()
	<-newer

	as.mu.Lock()
	defer as.mu.Unlock()
	var got []string
	for name := range as.offered {
		got = append(got, name)
	}
	slices.Sort(got)
	if want := []string{"demo__echo"}; !slices.Equal(got, want) {
		t.Fatalf("after the reload the agent is offered %v; the policy in force grants %v", got, want)
	}
}
