//go:build unix

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// chiod's MCP server declares tools.listChanged, so a policy reload that
// changes what an agent's capability grants must tell connected clients:
// the client through `chio mcp serve` gets notifications/tools/list_changed
// and its next tools/list no longer offers the tool whose grant the reload
// removed. Before, chiod re-derived the list only when a client asked, so
// the bridge (which mirrors chiod's list and re-reads it on that
// notification) went on offering the removed tool.
func TestMCPClientsAreToldOfAReload(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	policyText, err := os.ReadFile(filepath.Join(root, "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(work, "chio.toml")
	if err := os.WriteFile(config, policyText, 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config, filepath.Join(work, "data"))
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatalf("keygen: %d", code)
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "echo", "--grant", "files",
		"--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %d %s", code, errOut)
	}
	cmd := exec.Command(filepath.Join(binDir, "chio"), "mcp", "serve", "--url", d.url,
		"--capability", filepath.Join(work, "agent.cap"), "--key", filepath.Join(work, "agent.pem"))
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "reload", Version: "1"}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	offered := func() string {
		t.Helper()
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		return strings.Join(names, " ")
	}
	if got := offered(); !strings.Contains(got, "demo__echo") {
		t.Fatalf("before the reload: %s", got)
	}

	// Remove the echo grant and reload.
	echoGrant := "[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n"
	if !strings.Contains(string(policyText), echoGrant) {
		t.Fatal("quickstart.toml no longer has the echo grant as this test expects; update the test")
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(policyText), echoGrant, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(d.log(), "policy reloaded")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(d.log(), "policy reloaded") == before {
		if time.Now().After(deadline) {
			t.Fatalf("no reload:\n%s", d.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatalf("no tools/list_changed within 5s of the reload; the client is offered: %s", offered())
	}
	// The bridge re-reads chiod's list on the notification it relays; give
	// it the moment that takes.
	for deadline := time.Now().Add(5 * time.Second); strings.Contains(offered(), "demo__echo"); {
		if time.Now().After(deadline) {
			t.Fatalf("after the reload the client is still offered %s", offered())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
