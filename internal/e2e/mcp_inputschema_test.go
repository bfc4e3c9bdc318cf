//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcptest"
)

const inputSchemaPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = %q

[[servers.tools]]
name = "transfer"
input_schema = '''
{"type": "object",
 "properties": {"amount": {"type": "integer", "minimum": 1},
                "to": {"type": "string", "pattern": "^acct-[0-9]+$"}},
 "required": ["amount", "to"],
 "additionalProperties": false}
'''

[[grants]]
id = "pay"
server = "pay"
tool = "transfer"
`

// A real chiod with an http payment tool whose arguments the policy
// declares (input_schema), a real MCP client through `chio mcp serve`:
// tools/list offers the declared schema; a call that breaks it is refused
// over /mcp and denied over POST /v1/calls (403, a deny receipt), and the
// tool server never sees either; a SIGHUP reload changes the schema.
func TestMCPClientSeesAndIsHeldToTheDeclaredInputSchema(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(toolSrv.Close)
	delivered := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }

	work := t.TempDir()
	policyText := fmt.Sprintf(inputSchemaPolicy, toolSrv.URL)
	config := filepath.Join(work, "chio.toml")
	if err := os.WriteFile(config, []byte(policyText), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config, filepath.Join(work, "data"))
	a := newAgent(t, d, "pay")
	keyFile, capFile := filepath.Join(work, "agent.pem"), filepath.Join(work, "agent.cap")
	if err := keys.WritePrivateKey(keyFile, a.key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capFile, a.capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "chio"), "mcp", "serve", "--url", d.url, "--capability", capFile, "--key", keyFile)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "inputschema", Version: "1"}, nil).
		Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	transferSchema := func() string {
		t.Helper()
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == "pay__transfer" {
				b, _ := json.Marshal(tool.InputSchema)
				return string(b)
			}
		}
		return ""
	}

	if got := transferSchema(); !strings.Contains(got, `"additionalProperties":false`) || !strings.Contains(got, `"^acct-[0-9]+$"`) {
		t.Fatalf("pay__transfer is offered with %s; want the declared input_schema", got)
	}

	// Over MCP: refused before the pipeline, as an MCP tool's call would be.
	r := call(t, cs, "pay__transfer", map[string]any{"amount": 5, "to": "acct-1", "memo": "x"}, false)
	if !r.IsError || meta(r, "status") != "refused" || !strings.Contains(text(r), "arguments do not match the tool's inputSchema") {
		t.Fatalf("over MCP: %v %q", r.Meta, text(r))
	}
	// Over POST /v1/calls: denied by the input_schema guard, with a receipt.
	c := a.call(t, "bad-args-1", "pay", "transfer", `{"amount":"5","to":"acct-1"}`, "")
	code, out, err := postCall(ctx, http.DefaultClient, d.url, c)
	if err != nil || code != http.StatusForbidden || out.Status != "denied" || out.Guard != "input_schema" ||
		!strings.HasPrefix(out.ReceiptID, "rc-") || !strings.Contains(out.Reason, "arguments do not match the tool's inputSchema") {
		t.Fatalf("POST /v1/calls: %d %+v %v", code, out, err)
	}
	if n := delivered(); n != 0 {
		t.Fatalf("the tool server saw %d calls that break the schema", n)
	}
	r = call(t, cs, "pay__transfer", map[string]any{"amount": 5, "to": "acct-1"}, false)
	if r.IsError || delivered() != 1 {
		t.Fatalf("valid transfer: %v %q, delivered %d", r.Meta, text(r), delivered())
	}

	// A reload that allows a memo: offered to the client, and enforced.
	loose := strings.Replace(policyText, `"additionalProperties": false`, `"additionalProperties": {"type": "string"}`, 1)
	if err := os.WriteFile(config, []byte(loose), 0o600); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(d.log(), "policy reloaded")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, 10*time.Second, "the reload", func() bool { return strings.Count(d.log(), "policy reloaded") > before })
	mcptest.Eventually(t, 10*time.Second, "the reloaded schema to be offered", func() bool {
		return strings.Contains(transferSchema(), `"additionalProperties":{"type":"string"}`)
	})
	r = call(t, cs, "pay__transfer", map[string]any{"amount": 5, "to": "acct-2", "memo": "rent"}, false)
	if r.IsError || delivered() != 2 {
		t.Fatalf("after the reload: %v %q, delivered %d", r.Meta, text(r), delivered())
	}
}
