package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
	sdk "github.com/chiokernel/chio/sdk"
)

// agentFor issues, with the admin token in dataDir, a capability for grant
// to a fresh agent key and returns that agent's client.
func agentFor(t *testing.T, r *running, dataDir, grant string) *sdk.Client {
	t.Helper()
	adminRaw, err := os.ReadFile(filepath.Join(dataDir, daemon.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := keys.Generate(nil)
	body, _ := json.Marshal(map[string]any{"subject": agent.Public().String(), "grants": []string{grant}, "ttl": "1h"})
	req, _ := http.NewRequest("POST", r.url+"/v1/capabilities", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(adminRaw)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("issue capability: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var issued struct {
		Capability json.RawMessage `json:"capability"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&issued); err != nil {
		t.Fatal(err)
	}
	cl, err := sdk.NewClient(r.url, sdk.WithKey(agent), sdk.WithCapability(issued.Capability))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

const pingPolicy = `
[kernel]
listen = "127.0.0.1:7420"

[[servers]]
id = "payments"
transport = "http"
url = "%s"
[[servers.tools]]
name = "ping"

[[grants]]
id = "ping"
server = "payments"
tool = "ping"
`

// A reload that moves a server to another url (off a retired or
// compromised endpoint) cannot take effect: the dispatcher is built at
// start. Applying the rest of the file would put the new policy_hash (which
// covers the url) on receipts of calls still sent to the old endpoint, so
// the reload is refused whole: the running policy stays in force, and the
// log says a restart is needed.
func TestReloadRefusesServerURLChange(t *testing.T) {
	var hitsOld, hitsNew atomic.Int64
	tool := func(n *atomic.Int64) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			io.WriteString(w, `{"pong":true}`)
		}))
	}
	oldSrv, newSrv := tool(&hitsOld), tool(&hitsNew)
	defer oldSrv.Close()
	defer newSrv.Close()

	dir := t.TempDir()
	config := filepath.Join(dir, "policy.toml")
	oldText := fmt.Sprintf(pingPolicy, oldSrv.URL)
	if err := os.WriteFile(config, []byte(oldText), 0o600); err != nil {
		t.Fatal(err)
	}
	oldPolicy, err := policy.Parse([]byte(oldText), config)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, daemon.Options{ConfigPath: config, DataDir: filepath.Join(dir, "data")})
	cl := agentFor(t, r, filepath.Join(dir, "data"), "ping")

	if err := os.WriteFile(config, []byte(fmt.Sprintf(pingPolicy, newSrv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &reloadFixture{r: r, config: config}
	f.hup(t, 1)
	res, err := cl.CallTool(context.Background(), sdk.Call{Server: "payments", Tool: "ping", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	allowed, ok := res.(*sdk.Allowed)
	if !ok {
		t.Fatalf("call: %#v", res)
	}
	log := r.out.String()
	if !strings.Contains(log, "policy reload refused") || strings.Contains(log, "policy reloaded") ||
		!strings.Contains(log, `[[servers]] \"payments\" changed its url`) || !strings.Contains(log, "restart chiod") {
		t.Fatalf("a reload changing a server's url was not refused as needing a restart:\n%s", log)
	}
	if hitsOld.Load() != 1 || hitsNew.Load() != 0 {
		t.Fatalf("old=%d new=%d", hitsOld.Load(), hitsNew.Load())
	}
	// The receipt names the policy still in force.
	readRaw, _ := os.ReadFile(filepath.Join(dir, "data", daemon.ReadTokenFile))
	req, _ := http.NewRequest("GET", r.url+"/v1/receipts/"+allowed.ReceiptID, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(readRaw)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(raw), `"policy_hash":"`+oldPolicy.Hash+`"`) {
		t.Fatalf("receipt after the refused reload does not carry the running policy's hash %s:\n%s", oldPolicy.Hash, raw)
	}
}

// A call whose tool name holds an invisible character (here a zero-width
// space: "ec​ho" draws like "echo") is refused as malformed, as a control
// character is, before any grant is looked at.
func TestCallNameWithInvisibleCharacterIsRefused(t *testing.T) {
	dir := t.TempDir()
	r := start(t, daemon.Options{DataDir: dir})
	cl := agentFor(t, r, dir, "echo")
	for _, name := range []string{"ec\u200bho", "echo\u202e", "\ufeffecho"} {
		res, err := cl.CallTool(context.Background(), sdk.Call{Server: "demo", Tool: name, Arguments: map[string]any{}})
		if err == nil || !errors.Is(err, sdk.ErrBadRequest) || !strings.Contains(err.Error(), "invisible or text-direction") {
			t.Fatalf("tool %q: %#v %v", name, res, err)
		}
	}
	if res, err := cl.CallTool(context.Background(), sdk.Call{Server: "demo", Tool: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("plain echo: %#v %v", res, err)
	}
}
