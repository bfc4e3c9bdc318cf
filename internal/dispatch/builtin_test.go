package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

var builtinServers = []policy.Server{
	{ID: "demo", Transport: "builtin"},
	{ID: "payments", Transport: "builtin"}, // builtin tools answer under any id
}

func openDir(t *testing.T, dir string) *Router {
	t.Helper()
	r, err := New(builtinServers, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func call(t *testing.T, r *Router, id, server, tool, args string) kernel.DispatchResult {
	t.Helper()
	res, err := r.Dispatch(context.Background(), kernel.DispatchRequest{
		RequestID: id, Server: server, Tool: tool, Arguments: json.RawMessage(args),
	})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

func ledgerLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "builtin", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data)) // ledger lines hold no spaces
}

func TestBuiltinLayout(t *testing.T) {
	dir := t.TempDir()
	openDir(t, dir)
	fi, err := os.Stat(filepath.Join(dir, "builtin"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("builtin dir: %v %v", fi, err)
	}
	for name := range seedFiles {
		if _, err := os.Stat(filepath.Join(dir, "builtin", "sandbox", name)); err != nil {
			t.Errorf("seed file: %v", err)
		}
	}
}

func TestEcho(t *testing.T) {
	r := newTestRouter(t, builtinServers)
	tests := []struct{ args, want string }{
		{`{"a":1,"b":[true,null]}`, `{"echo":{"a":1,"b":[true,null]}}`},
		{` { "spaced" : "x" } `, `{"echo":{"spaced":"x"}}`},
		{``, `{"echo":null}`},
	}
	for i, tc := range tests {
		res := call(t, r, "echo-"+string(rune('a'+i)), "demo", "echo", tc.args)
		if string(res.Output) != tc.want || res.ToolError != "" {
			t.Errorf("echo %s = %s / %q, want %s", tc.args, res.Output, res.ToolError, tc.want)
		}
	}
}

func TestUnknownBuiltinTool(t *testing.T) {
	r := newTestRouter(t, builtinServers)
	res := call(t, r, "u1", "demo", "format_disk", `{}`)
	if res.ToolError != `unknown builtin tool "format_disk"` {
		t.Fatalf("ToolError = %q", res.ToolError)
	}
}

const refundArgsOK = `{"customer_id":"cus_1","amount":12.5,"currency":"EUR"}`

func TestIssueRefund(t *testing.T) {
	dir := t.TempDir()
	r := openDir(t, dir)
	first := call(t, r, "req-A", "payments", "issue_refund", refundArgsOK)
	if first.ToolError != "" {
		t.Fatal(first.ToolError)
	}
	var out map[string]any
	if err := json.Unmarshal(first.Output, &out); err != nil {
		t.Fatal(err)
	}
	id, _ := out["refund_id"].(string)
	if !strings.HasPrefix(id, "rf-") || len(id) != 3+16 || out["status"] != "issued" ||
		out["amount"] != 12.5 || out["currency"] != "EUR" || out["customer_id"] != "cus_1" {
		t.Fatalf("output = %s", first.Output)
	}
	// Same id again, even under another server id and with other
	// arguments: the first result, no second ledger line.
	again := call(t, r, "req-A", "demo", "issue_refund", `{"customer_id":"x","amount":999,"currency":"USD"}`)
	if !bytes.Equal(again.Output, first.Output) {
		t.Fatalf("replay = %s, want %s", again.Output, first.Output)
	}
	if n := len(ledgerLines(t, dir)); n != 1 {
		t.Fatalf("ledger lines = %d, want 1", n)
	}
	second := call(t, r, "req-B", "payments", "issue_refund", refundArgsOK)
	if bytes.Equal(second.Output, first.Output) {
		t.Fatal("different request ids got the same refund")
	}
	lines := ledgerLines(t, dir)
	if len(lines) != 2 {
		t.Fatalf("ledger lines = %d, want 2", len(lines))
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	if e["request_id"] != "req-A" || e["refund_id"] != id || e["customer_id"] != "cus_1" || e["amount"] != 12.5 || e["currency"] != "EUR" {
		t.Fatalf("ledger line = %s", lines[0])
	}
}

func TestIssueRefundConcurrentSameID(t *testing.T) {
	dir := t.TempDir()
	r := openDir(t, dir)
	results := make([]kernel.DispatchResult, 20)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = call(t, r, "same", "payments", "issue_refund", refundArgsOK) })
	}
	wg.Wait()
	for _, res := range results[1:] {
		if !bytes.Equal(res.Output, results[0].Output) {
			t.Fatalf("results differ: %s vs %s", res.Output, results[0].Output)
		}
	}
	if n := len(ledgerLines(t, dir)); n != 1 {
		t.Fatalf("ledger lines = %d, want 1", n)
	}
}

func TestIssueRefundBadArgs(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"customer_id":"c","amount":0,"currency":"EUR"}`, "invalid arguments: amount must be > 0"},
		{`{"customer_id":"c","amount":-3,"currency":"EUR"}`, "invalid arguments: amount must be > 0"},
		{`{"customer_id":"c","amount":1e10,"currency":"EUR"}`, "amount must be <= 1e9"},
		{`{"customer_id":"c","currency":"EUR"}`, "amount is required"},
		{`{"customer_id":"c","amount":"5","currency":"EUR"}`, "invalid arguments"},
		{`{"customer_id":"","amount":1,"currency":"EUR"}`, "customer_id must be non-empty"},
		{`{"customer_id":"` + strings.Repeat("é", 129) + `","amount":1,"currency":"EUR"}`, "at most 128"},
		{`{"customer_id":"c","amount":1,"currency":"eur"}`, "currency must be 3 uppercase letters"},
		{`{"customer_id":"c","amount":1,"currency":"EURO"}`, "currency must be 3 uppercase letters"},
		{`{"customer_id":"c","amount":1,"currency":"EUR","memo":"x"}`, `unknown field "memo"`},
		{`{"customer_id":"c","amount":1,"currency":"EUR"} {}`, "trailing data"},
		{`null`, "must be a JSON object"},
		{`[1]`, "must be a JSON object"},
	}
	dir := t.TempDir()
	r := openDir(t, dir)
	for i, tc := range tests {
		res := call(t, r, "bad-"+string(rune('a'+i)), "payments", "issue_refund", tc.args)
		if !strings.Contains(res.ToolError, tc.want) {
			t.Errorf("%s: ToolError = %q, want %q", tc.args, res.ToolError, tc.want)
		}
		if string(res.Output) != "null" {
			t.Errorf("%s: Output = %s, want null", tc.args, res.Output)
		}
	}
	if n := len(ledgerLines(t, dir)); n != 0 {
		t.Fatalf("ledger lines = %d, want 0", n)
	}
}

func TestDeleteFile(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, sandbox, outside string)
		path    string
		wantErr string   // ToolError substring; "" means success
		gone    []string // sandbox-relative paths that must be gone
		kept    []string // paths that must survive, relative to the data dir
	}{
		{name: "relative", path: "notes/todo.txt", gone: []string{"notes/todo.txt"}, kept: []string{"builtin/sandbox/etc/passwd"}},
		{name: "absolute maps into sandbox", path: "/etc/passwd", gone: []string{"etc/passwd"}},
		{name: "dot segments cleaned", path: "./tmp//cache.bin", gone: []string{"tmp/cache.bin"}},
		{name: "dotdot", path: "../x", wantErr: "escapes sandbox", kept: []string{"builtin/x"}},
		{name: "dotdot inside", path: "notes/../../x", wantErr: "escapes sandbox", kept: []string{"builtin/x"}},
		{
			name: "symlinked dir out of sandbox", path: "out/secret.txt", wantErr: "cannot delete",
			setup: func(t *testing.T, sandbox, outside string) { symlink(t, outside, filepath.Join(sandbox, "out")) },
			kept:  []string{"outside/secret.txt"},
		},
		{
			name: "symlink to outside file", path: "link", wantErr: "outside the sandbox",
			setup: func(t *testing.T, sandbox, outside string) {
				symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(sandbox, "link"))
			},
			kept: []string{"outside/secret.txt", "builtin/sandbox/link"},
		},
		{name: "missing", path: "notes/nope.txt", wantErr: "not found"},
		{name: "directory", path: "notes", wantErr: "is a directory", kept: []string{"builtin/sandbox/notes/todo.txt"}},
		{name: "root", path: "/", wantErr: "sandbox root"},
		{name: "empty", path: "", wantErr: "invalid arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := openDir(t, dir)
			sandbox := filepath.Join(dir, "builtin", "sandbox")
			outside := filepath.Join(dir, "outside")
			os.Mkdir(outside, 0o700)
			writeFile(t, filepath.Join(outside, "secret.txt"))
			writeFile(t, filepath.Join(dir, "builtin", "x"))
			if tc.setup != nil {
				tc.setup(t, sandbox, outside)
			}
			args, _ := json.Marshal(map[string]string{"path": tc.path})
			res := call(t, r, "del", "demo", "delete_file", string(args))
			if tc.wantErr == "" {
				want, _ := json.Marshal(map[string]string{"deleted": tc.path})
				if res.ToolError != "" || !bytes.Equal(res.Output, want) {
					t.Fatalf("result = %s / %q", res.Output, res.ToolError)
				}
			} else if !strings.Contains(res.ToolError, tc.wantErr) {
				t.Fatalf("ToolError = %q, want %q", res.ToolError, tc.wantErr)
			}
			for _, p := range tc.gone {
				if _, err := os.Lstat(filepath.Join(sandbox, p)); !os.IsNotExist(err) {
					t.Errorf("%s still exists (%v)", p, err)
				}
			}
			for _, p := range tc.kept {
				if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
					t.Errorf("%s was removed: %v", p, err)
				}
			}
		})
	}
}

func TestDeleteFileStrictArgs(t *testing.T) {
	r := newTestRouter(t, builtinServers)
	res := call(t, r, "d1", "demo", "delete_file", `{"path":"notes/todo.txt","recursive":true}`)
	if !strings.Contains(res.ToolError, `unknown field "recursive"`) {
		t.Fatalf("ToolError = %q", res.ToolError)
	}
}

// A new Router on the same data dir still knows every request id it served:
// retries after a restart do not repeat effects.
func TestStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r1, err := New(builtinServers, dir)
	if err != nil {
		t.Fatal(err)
	}
	refund := call(t, r1, "r-1", "payments", "issue_refund", refundArgsOK)
	del := call(t, r1, "d-1", "demo", "delete_file", `{"path":"/etc/passwd"}`)
	r1.Close()

	r2 := openDir(t, dir)
	if got := call(t, r2, "r-1", "payments", "issue_refund", refundArgsOK); !bytes.Equal(got.Output, refund.Output) {
		t.Fatalf("refund replay = %s, want %s", got.Output, refund.Output)
	}
	// Without the record this would now say "not found".
	if got := call(t, r2, "d-1", "demo", "delete_file", `{"path":"/etc/passwd"}`); got.ToolError != "" || !bytes.Equal(got.Output, del.Output) {
		t.Fatalf("delete replay = %s / %q", got.Output, got.ToolError)
	}
	if n := len(ledgerLines(t, dir)); n != 1 {
		t.Fatalf("ledger lines = %d, want 1", n)
	}
	// The sandbox is seeded once: a deleted demo file stays deleted.
	if _, err := os.Stat(filepath.Join(dir, "builtin", "sandbox", "etc", "passwd")); !os.IsNotExist(err) {
		t.Fatalf("etc/passwd re-seeded: %v", err)
	}
}

// A crash after the ledger append but before the record write must not let
// a retry refund twice; a torn trailing line is discarded.
func TestLedgerRecovery(t *testing.T) {
	dir := t.TempDir()
	r1, err := New(builtinServers, dir)
	if err != nil {
		t.Fatal(err)
	}
	refund := call(t, r1, "r-1", "payments", "issue_refund", refundArgsOK)
	r1.Close()
	if err := os.Remove(filepath.Join(dir, "builtin", "requests", recordName("r-1"))); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "builtin", "ledger.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"request_id":"torn","cust`)
	f.Close()

	r2 := openDir(t, dir)
	if got := call(t, r2, "r-1", "payments", "issue_refund", refundArgsOK); !bytes.Equal(got.Output, refund.Output) {
		t.Fatalf("recovered replay = %s, want %s", got.Output, refund.Output)
	}
	if lines := ledgerLines(t, dir); len(lines) != 1 {
		t.Fatalf("ledger = %q, want 1 line", lines)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// echo returns the bytes it received: it is how a demo shows what a tool
// gets (the canonical bytes parameter_hash covers). json.Marshal would
// write '<', '>' and '&' in them as \u003c, \u003e and \u0026.
func TestEchoKeepsTheBytesItReceived(t *testing.T) {
	r := newTestRouter(t, builtinServers)
	const args = "{\"path\":\"/tmp/<a>&b\",\"sep\":\"\u2028\"}"
	res := call(t, r, "echo-raw", "demo", "echo", args)
	if want := `{"echo":` + args + `}`; string(res.Output) != want || res.ToolError != "" {
		t.Fatalf("echo %s = %s / %q, want %s", args, res.Output, res.ToolError, want)
	}
}
