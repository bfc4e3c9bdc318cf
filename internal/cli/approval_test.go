package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const approvalPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
[[servers.tools]]
name = "issue_refund"
amount = "/amount"
currency = "/currency"
action = "charge"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"

[[grants]]
id = "ask"
server = "demo"
tool = "ask"
[grants.approval]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"

[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"

[[grants]]
id = "quorum"
server = "demo"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

const approvalAdminToken = "admin-secret"

// approvalWorld is a real kernel on a real bbolt store with the builtin demo tools,
// served over HTTP, plus key files for two approvers, a stranger and the agent.
type approvalWorld struct {
	k      *kernel.Kernel
	url    string
	dir    string
	agent  keys.PrivateKey
	capRaw []byte
	tw     *testkit.World
}

// newApprovalWorld builds the world; wrap, if given, wraps its store
// (testkit.Options.WrapStore: fault injection).
func newApprovalWorld(t *testing.T, wrap ...func(kernel.Store) kernel.Store) *approvalWorld {
	t.Helper()
	w := &approvalWorld{dir: t.TempDir()}
	gen := func(name string) keys.PrivateKey {
		k, err := keys.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.WritePrivateKey(filepath.Join(w.dir, name+".pem"), k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	lead, cfo := gen("lead"), gen("cfo")
	gen("stranger")
	w.agent = gen("agent")
	w.tw = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(approvalPolicy, lead.Public(), cfo.Public()), PolicyName: "cli.toml",
		DataDir: w.dir, Clock: clock.Real{}, Agent: testkit.Key(w.agent), Grants: []string{"echo", "refunds", "ask", "confirm", "quorum"},
		RequestPrefix: "req-cli-", Serve: true, AdminToken: approvalAdminToken, WrapStore: wrapOf(wrap)})
	w.k, w.url, w.capRaw = w.tw.Kernel, w.tw.URL, w.tw.CapRaw
	return w
}

func wrapOf(wrap []func(kernel.Store) kernel.Store) func(kernel.Store) kernel.Store {
	if len(wrap) == 0 {
		return nil
	}
	return wrap[0]
}

// submit makes a call as the agent, straight through the kernel.
func (w *approvalWorld) submit(t *testing.T, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	return w.tw.Submit(t, tool, args, intent)
}

func (w *approvalWorld) refund(t *testing.T, amount int) *kernel.Outcome {
	t.Helper()
	return w.submit(t, "issue_refund", fmt.Sprintf(`{"customer_id":"cust-1","amount":%d,"currency":"USD"}`, amount),
		fmt.Sprintf(`{"purpose":"order 8834","max_amount":{"units":%d,"currency":"USD"}}`, amount))
}

// run is `chio args...` in process; env holds the environment (CHIO_URL is
// set unless given).
func (w *approvalWorld) run(env map[string]string, args ...string) (stdout, stderr string, code int) {
	if _, ok := env["CHIO_URL"]; !ok {
		env["CHIO_URL"] = w.url
	}
	var so, se bytes.Buffer
	code = cli.Main(args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
	return so.String(), se.String(), code
}

func adminEnv() map[string]string { return map[string]string{"CHIO_ADMIN_TOKEN": approvalAdminToken} }

func (w *approvalWorld) key(name string) string { return filepath.Join(w.dir, name+".pem") }

func TestApprovalListAndShow(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	so, se, code := w.run(adminEnv(), "approval", "list")
	if code != 0 || !strings.Contains(so, out.ApprovalRequestID) || !strings.Contains(so, "demo/issue_refund") ||
		!strings.Contains(so, "0/1") || !strings.Contains(so, "QUORUM") || !strings.Contains(se, "1 pending") {
		t.Fatalf("list: %d\n%s%s", code, so, se)
	}
	so, _, code = w.run(adminEnv(), "approval", "list", "--output", "json", "--tool", "issue_refund")
	var arr []map[string]any
	if code != 0 || json.Unmarshal([]byte(so), &arr) != nil || len(arr) != 1 || arr[0]["approval_id"] != out.ApprovalRequestID {
		t.Fatalf("list json: %d %s", code, so)
	}
	so, _, code = w.run(adminEnv(), "approval", "list", "--output", "jsonl", "--server", "elsewhere")
	if code != 0 || strings.TrimSpace(so) != "" {
		t.Fatalf("filtered list: %d %q", code, so)
	}
	so, _, code = w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 || !strings.Contains(so, "for 450 USD: order 8834") || !strings.Contains(so, "pending") || !strings.Contains(so, out.RequestID) {
		t.Fatalf("show: %d\n%s", code, so)
	}
	if !strings.Contains(so, "WHY             the amount is at or above the approval threshold (require_approval_above)") {
		t.Fatalf("show why:\n%s", so)
	}
	// Approvers by name, as the policy names them.
	lead, _ := keys.LoadPrivateKey(w.key("lead"))
	cfo, _ := keys.LoadPrivateKey(w.key("cfo"))
	if !strings.Contains(so, "APPROVERS       Finance Lead ("+lead.Public().String()+")\n                CFO ("+cfo.Public().String()+")") {
		t.Fatalf("show approvers:\n%s", so)
	}
	so, _, code = w.run(adminEnv(), "approval", "show", out.ApprovalRequestID, "--output", "json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(so), &v) != nil || v["status"] != "pending" {
		t.Fatalf("show json: %d %s", code, so)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		code int
		err  string
	}{
		"unknown id":      {adminEnv(), []string{"approval", "show", "ar-nope"}, 1, "not_found"},
		"no bearer":       {map[string]string{}, []string{"approval", "list"}, 1, "unauthorized"},
		"show without id": {adminEnv(), []string{"approval", "show"}, 2, "usage"},
		"bad output":      {adminEnv(), []string{"approval", "list", "--output", "yaml"}, 2, "--output"},
	} {
		t.Run(name, func(t *testing.T) {
			_, se, code := w.run(c.env, c.args...)
			if code != c.code || !strings.Contains(se, c.err) {
				t.Fatalf("%d %s", code, se)
			}
		})
	}
}

// await runs `chio await` in the background and returns its result later.
func (w *approvalWorld) await(env map[string]string, args ...string) <-chan [3]any {
	ch := make(chan [3]any, 1)
	go func() {
		so, se, code := w.run(env, append([]string{"await"}, args...)...)
		ch <- [3]any{so, se, code}
	}()
	return ch
}

func waitAwait(t *testing.T, ch <-chan [3]any) (string, string, int) {
	t.Helper()
	select {
	case r := <-ch:
		return r[0].(string), r[1].(string), r[2].(int)
	case <-time.After(20 * time.Second):
		t.Fatal("await did not return")
	}
	return "", "", 0
}

func TestApproveDenyAwait(t *testing.T) {
	w := newApprovalWorld(t)
	agentOnly := map[string]string{"CHIO_KEY": w.key("agent")}

	t.Run("approve with a note; await by approval id with the agent's proof", func(t *testing.T) {
		out := w.refund(t, 450)
		done := w.await(agentOnly, out.ApprovalRequestID, "--timeout", "30s")
		time.Sleep(100 * time.Millisecond) // let the long-poll park (not required for correctness)
		so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--note", "ok, customer verified")
		if code != 0 || !strings.Contains(so, "approved "+out.ApprovalRequestID) || !strings.Contains(se, "for 450 USD") {
			t.Fatalf("approve: %d %s %s", code, so, se)
		}
		so, se, code = waitAwait(t, done)
		if code != 0 || !strings.Contains(so, `"refund_id":"rf-`) || !strings.Contains(so, `"amount":450`) ||
			!strings.Contains(se, "note: ok, customer verified") || !strings.Contains(se, "approved by Finance Lead") {
			t.Fatalf("await: %d\n%s\n%s", code, so, se)
		}
		// A second decision on a resolved request is refused before signing.
		if _, se, code := w.run(adminEnv(), "approval", "deny", out.ApprovalRequestID, "--key", w.key("cfo"), "--reason", "late"); code != 1 || !strings.Contains(se, "not pending") {
			t.Fatalf("late deny: %d %s", code, se)
		}
	})
	t.Run("amend; await by request id with a bearer, json", func(t *testing.T) {
		out := w.refund(t, 450)
		done := w.await(adminEnv(), out.RequestID, "--output", "json")
		so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo"),
			"--amend", `{"customer_id":"cust-1","amount":200,"currency":"USD"}`, "--note", "partial", "--output", "json")
		if code != 0 || !strings.Contains(so, `"outcome": "approved"`) {
			t.Fatalf("approve: %d %s %s", code, so, se)
		}
		so, _, code = waitAwait(t, done)
		var st map[string]any
		if code != 0 || json.Unmarshal([]byte(so), &st) != nil || st["status"] != "allowed" {
			t.Fatalf("await: %d %s", code, so)
		}
		ap := st["approval"].(map[string]any)
		if st["output"].(map[string]any)["amount"] != 200.0 || ap["amended"] != true || ap["note"] != "partial" ||
			ap["approver_display_name"] != "CFO" {
			t.Fatalf("await json: %v", st)
		}
	})
	t.Run("deny; await exits 4 with guard and reason", func(t *testing.T) {
		out := w.refund(t, 450)
		done := w.await(agentOnly, out.ApprovalRequestID)
		so, se, code := w.run(adminEnv(), "approval", "deny", out.ApprovalRequestID, "--key", w.key("lead"), "--reason", "duplicate refund")
		if code != 0 || !strings.Contains(so, "denied "+out.ApprovalRequestID) {
			t.Fatalf("deny: %d %s %s", code, so, se)
		}
		so, se, code = waitAwait(t, done)
		if code != 4 || !strings.Contains(so, "denied by human-approval: duplicate refund") || !strings.Contains(se, "denied by Finance Lead") {
			t.Fatalf("await: %d\n%s\n%s", code, so, se)
		}
	})
	t.Run("times out with exit 5", func(t *testing.T) {
		out := w.refund(t, 450)
		start := time.Now()
		_, se, code := waitAwait(t, w.await(agentOnly, out.ApprovalRequestID, "--timeout", "1s"))
		if code != 5 || !strings.Contains(se, "timed out") || !strings.Contains(se, "pending_approval") || time.Since(start) > 10*time.Second {
			t.Fatalf("%d %s after %s", code, se, time.Since(start))
		}
	})
	t.Run("an allowed call returns at once", func(t *testing.T) {
		out := w.submit(t, "echo", `{"hi":1}`, "")
		so, _, code := waitAwait(t, w.await(agentOnly, out.RequestID))
		if code != 0 || strings.TrimSpace(so) != `{"echo":{"hi":1}}` {
			t.Fatalf("%d %q", code, so)
		}
	})
	t.Run("rejections and usage", func(t *testing.T) {
		out := w.refund(t, 450)
		other, _ := keys.Generate(nil)
		otherPath := filepath.Join(t.TempDir(), "other.pem")
		keys.WritePrivateKey(otherPath, other)
		for name, c := range map[string]struct {
			env  map[string]string
			args []string
			code int
			err  string
		}{
			"key not in the policy":    {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("stranger")}, 1, "approval_rejected"},
			"the agent's own key":      {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("agent")}, 1, "approval_rejected"},
			"approve without --key":    {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID}, 2, "--key FILE is required"},
			"approve without an id":    {adminEnv(), []string{"approval", "approve", "--key", w.key("lead")}, 2, "missing ID"},
			"deny without --reason":    {adminEnv(), []string{"approval", "deny", out.ApprovalRequestID, "--key", w.key("lead")}, 2, "--reason"},
			"amend not an object":      {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--amend", "[1]"}, 2, "--amend"},
			"ttl over an hour":         {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--ttl", "2h"}, 2, "--ttl"},
			"ttl under a second":       {adminEnv(), []string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--ttl", "500ms"}, 2, "--ttl"},
			"watch ttl under a second": {adminEnv(), []string{"approval", "watch", "--key", w.key("lead"), "--ttl", "500ms"}, 2, "--ttl"},
			"unknown approval":         {adminEnv(), []string{"approval", "approve", "ar-nope", "--key", w.key("lead")}, 1, "not_found"},
			"await without auth":       {map[string]string{}, []string{"await", out.ApprovalRequestID}, 2, "CHIO_KEY"},
			"await with another key":   {map[string]string{"CHIO_KEY": otherPath}, []string{"await", out.ApprovalRequestID}, 1, "unauthorized"},
			"await an unknown call":    {adminEnv(), []string{"await", "req-nope"}, 1, "not_found"},
			"await a server not there": {map[string]string{"CHIO_URL": "http://127.0.0.1:1", "CHIO_ADMIN_TOKEN": "x"}, []string{"await", "req-x", "--timeout", "1s"}, 5, "retrying"},
		} {
			t.Run(name, func(t *testing.T) {
				_, se, code := w.run(c.env, c.args...)
				if code != c.code || !strings.Contains(se, c.err) {
					t.Fatalf("exit %d, stderr %s", code, se)
				}
			})
		}
		// None of that decided anything.
		if rec, _ := w.k.Call(out.RequestID); rec.Status != kernel.StatusPendingApproval {
			t.Fatalf("%+v", rec)
		}
	})
}

func TestApprovalBatch(t *testing.T) {
	w := newApprovalWorld(t)
	so, se, code := w.run(adminEnv(), "approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_*",
		"--subject", w.agent.Public().String(), "--max-calls", "2", "--max-amount-per-call", "500:USD", "--max-total", "800:USD", "--for", "1h")
	id := strings.TrimSpace(so)
	if code != 0 || !strings.HasPrefix(id, "ba-") || !strings.Contains(se, "revoke with") {
		t.Fatalf("create: %d %q %s", code, so, se)
	}
	if out := w.refund(t, 450); out.Status != kernel.StatusAllowed {
		t.Fatalf("covered call: %+v", out)
	}
	if out := w.refund(t, 450); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("over the total, must ask a human: %+v", out)
	}
	so, _, code = w.run(adminEnv(), "approval", "batch", "list")
	if code != 0 || !strings.Contains(so, id) || !strings.Contains(so, "1 calls, 450 units") || !strings.Contains(so, "false") {
		t.Fatalf("list: %d\n%s", code, so)
	}
	if so, se, code := w.run(adminEnv(), "approval", "batch", "revoke", id); code != 0 || !strings.Contains(so, "revoked") {
		t.Fatalf("revoke: %d %s %s", code, so, se)
	}
	so, _, code = w.run(adminEnv(), "approval", "batch", "list", "--output", "jsonl")
	if code != 0 || !strings.Contains(so, `"revoked":true`) {
		t.Fatalf("list after revoke: %d %s", code, so)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		code int
		err  string
	}{
		"untrusted approver": {adminEnv(), []string{"approval", "batch", "create", "--key", w.key("stranger"), "--server", "demo", "--tool", "*", "--for", "1h"}, 1, "approval_rejected"},
		"no --for":           {adminEnv(), []string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "*"}, 2, "--for DURATION is required"},
		"bad pattern":        {adminEnv(), []string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "d*o", "--tool", "*", "--for", "1h"}, 2, "pattern"},
		"bad amount":         {adminEnv(), []string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "*", "--for", "1h", "--max-total", "lots"}, 2, "UNITS:CURRENCY"},
		"revoke needs admin": {map[string]string{}, []string{"approval", "batch", "revoke", id}, 1, "unauthorized"},
		"revoke unknown":     {adminEnv(), []string{"approval", "batch", "revoke", "ba-nope"}, 1, "not_found"},
		"no subcommand":      {adminEnv(), []string{"approval", "batch"}, 2, "missing command; one of: create, list, revoke"},
	} {
		t.Run(name, func(t *testing.T) {
			_, se, code := w.run(c.env, c.args...)
			if code != c.code || !strings.Contains(se, c.err) {
				t.Fatalf("exit %d, stderr %s", code, se)
			}
		})
	}
}

func TestApproveWithAnswers(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "ask", `{"questions":[{"id":"region","text":"Which region?","type":"single","options":["eu","us"]}]}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v", out)
	}
	if _, _, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--answers", `{"region":"mars"}`); code != cli.ExitUsage {
		t.Fatalf("bad answer: exit %d", code)
	}
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--answers", `{"region":"eu"}`); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rec, _ := w.k.Call(out.RequestID)
	if rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("%+v %s", rec, rec.Output)
	}
}
