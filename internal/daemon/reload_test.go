package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
	sdk "github.com/chiokernel/chio/sdk"
)

// reloadFixture is a chiod on a copy of the quickstart policy that the test
// may rewrite, with an agent allowed to park refunds.
type reloadFixture struct {
	r      *running
	config string
	reader string
	agent  *sdk.Client
}

func newReloadFixture(t *testing.T) *reloadFixture {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "policy.toml")
	raw, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, daemon.Options{ConfigPath: config, DataDir: filepath.Join(dir, "data")})
	adminRaw, _ := os.ReadFile(filepath.Join(dir, "data", daemon.AdminTokenFile))
	readRaw, _ := os.ReadFile(filepath.Join(dir, "data", daemon.ReadTokenFile))
	admin := strings.TrimSpace(string(adminRaw))

	agent, _ := keys.Generate(nil)
	body, _ := json.Marshal(map[string]any{"subject": agent.Public().String(), "grants": []string{"refunds"}, "ttl": "1h"})
	req, _ := http.NewRequest("POST", r.url+"/v1/capabilities", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
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
	return &reloadFixture{r: r, config: config, reader: strings.TrimSpace(string(readRaw)), agent: cl}
}

// callbackHint parks a refund and returns its request's callback_hint,
// which chiod builds from [kernel] public_url.
func (f *reloadFixture) callbackHint(t *testing.T) string {
	t.Helper()
	res, err := f.agent.CallTool(context.Background(), sdk.Call{Server: "demo", Tool: "issue_refund",
		Arguments: map[string]any{"amount": 450, "currency": "USD"},
		Intent:    &sdk.Intent{Purpose: "refund", MaxAmount: &sdk.Amount{Units: 450, Currency: "USD"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.(*sdk.PendingApproval)
	if !ok {
		t.Fatalf("want pending: %#v", res)
	}
	req, _ := http.NewRequest("GET", f.r.url+"/approvals/"+p.ApprovalID, nil)
	req.Header.Set("Authorization", "Bearer "+f.reader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Request struct {
			CallbackHint string `json:"callback_hint"`
		} `json:"request"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Request.CallbackHint
}

// hup sends SIGHUP and waits for the n-th reload outcome line ("policy
// reloaded" or "policy reload refused") in chiod's log.
func (f *reloadFixture) hup(t *testing.T, n int) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out := f.r.out.String()
		if strings.Count(out, "policy reloaded")+strings.Count(out, "policy reload refused") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload %d:\n%s", n, out)
		}
	}
}

// SIGHUP keeps [kernel] (with -listen applied) and [channels] from the
// running policy: chiod started with -listen keeps advertising the address
// it serves on, whether the file is unchanged or its [kernel] was edited;
// an edited [kernel] is reported as awaiting a restart.
func TestReloadKeepsKernelSettings(t *testing.T) {
	f := newReloadFixture(t)
	onServed := func(when, hint string) {
		t.Helper()
		if !strings.HasPrefix(hint, f.r.url+"/approvals/") {
			t.Fatalf("callback_hint %s = %q, want it on %s, where chiod serves", when, hint, f.r.url)
		}
	}
	onServed("before a reload", f.callbackHint(t))

	f.hup(t, 1) // the same file
	onServed("after reloading the same file", f.callbackHint(t))
	if strings.Contains(f.r.out.String(), "after a restart") {
		t.Fatalf("-listen reported as a [kernel] change awaiting a restart:\n%s", f.r.out)
	}

	raw, _ := os.ReadFile(f.config)
	edited := strings.Replace(string(raw), `listen   = "127.0.0.1:7420"`,
		`listen   = "127.0.0.1:7421"`+"\npublic_url = \"https://chio.example.com\"", 1)
	if edited == string(raw) {
		t.Fatal("the quickstart's [kernel] listen line moved; update this test")
	}
	if err := os.WriteFile(f.config, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	f.hup(t, 2)
	onServed("after reloading an edited [kernel]", f.callbackHint(t))
	if out := f.r.out.String(); !strings.Contains(out, "take effect only after a restart") || strings.Contains(out, "policy reload refused") {
		t.Fatalf("an edited [kernel] was not reported as awaiting a restart:\n%s", out)
	}
	// The one [kernel] setting a reload applies is not said to wait.
	if out := f.r.out.String(); !strings.Contains(out, "but [kernel] max_pending_approvals_per_agent, which this reload applies") {
		t.Fatalf("the reload's log says every [kernel] change waits for a restart, max_pending_approvals_per_agent too:\n%s", out)
	}
}

// A reloaded policy whose grant names a channel the running chiod has not
// set up (it was added to [channels] in the same edit) is refused whole:
// its requests would reach nobody on that channel until a restart.
func TestReloadRefusesChannelNotRunning(t *testing.T) {
	f := newReloadFixture(t)
	raw, _ := os.ReadFile(f.config)
	edited := strings.Replace(string(raw), `channels = ["dashboard", "poll"]   # the web dashboard`,
		`channels = ["dashboard", "webhook"]   # the web dashboard`, 1)
	if edited == string(raw) {
		t.Fatal("the quickstart's refunds channels line moved; update this test")
	}
	edited += "\n[channels.webhook]\nurl = \"https://hooks.example.com/chio\"\n"
	if err := os.WriteFile(f.config, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	f.hup(t, 1)
	out := f.r.out.String()
	if !strings.Contains(out, "policy reload refused") || !strings.Contains(out, `channel \"webhook\"`) || strings.Contains(out, "policy reloaded") {
		t.Fatalf("reload naming a channel chiod does not run:\n%s", out)
	}
}

// park calls issue_refund for 450 USD (over the quickstart's approval
// threshold) and returns the outcome.
func (f *reloadFixture) park(t *testing.T) any {
	t.Helper()
	res, err := f.agent.CallTool(context.Background(), sdk.Call{Server: "demo", Tool: "issue_refund",
		Arguments: map[string]any{"amount": 450, "currency": "USD"},
		Intent:    &sdk.Intent{Purpose: "refund", MaxAmount: &sdk.Amount{Units: 450, Currency: "USD"}}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// max_pending_approvals_per_agent is read per call from the policy in
// force (no listener or store is built from it), and a reload puts the
// file's hash on every receipt: a reload must apply it. Kept from the
// start, an operator who lowered it to stop one agent burying its
// approvers under requests got no effect until a restart, and the cap's
// deny receipts named the hash of a file whose cap was not the one applied.
// Calls already parked stay parked.
func TestReloadAppliesPendingApprovalCap(t *testing.T) {
	f := newReloadFixture(t)
	for i := 0; i < 2; i++ {
		if _, ok := f.park(t).(*sdk.PendingApproval); !ok {
			t.Fatalf("park %d under the default cap of 100 was not parked", i+1)
		}
	}
	raw, _ := os.ReadFile(f.config)
	edited := strings.Replace(string(raw), `listen   = "127.0.0.1:7420"`,
		`listen   = "127.0.0.1:7420"`+"\nmax_pending_approvals_per_agent = 2", 1)
	if edited == string(raw) {
		t.Fatal("the quickstart's [kernel] listen line moved; update this test")
	}
	if err := os.WriteFile(f.config, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	f.hup(t, 1)
	if out := f.r.out.String(); strings.Contains(out, "policy reload refused") {
		t.Fatalf("reload refused:\n%s", out)
	}
	switch res := f.park(t).(type) {
	case *sdk.Denied:
		if res.Guard != "max_pending_approvals_per_agent" {
			t.Fatalf("third call denied by %q (%s), want max_pending_approvals_per_agent", res.Guard, res.Reason)
		}
	default:
		t.Fatalf("after a reload setting max_pending_approvals_per_agent = 2, a third call with 2 waiting was %#v, want denied by the cap", res)
	}
}
