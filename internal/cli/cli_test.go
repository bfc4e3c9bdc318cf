package cli_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// chio runs the CLI in process with an empty environment.
func chio(env map[string]string, args ...string) (stdout, stderr string, code int) {
	var so, se bytes.Buffer
	code = cli.Main(args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
	return so.String(), se.String(), code
}

func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"--url", "http://x", "--help"}} {
		so, se, code := chio(nil, args...)
		if code != cli.ExitOK || se != "" || !strings.Contains(so, "usage: chio [--url URL]") ||
			!strings.Contains(so, "policy explain FILE") || !strings.Contains(so, "6 allowed but no result (the tool failed, not delivered, or outcome unknown)") {
			t.Fatalf("%q: exit %d\nstdout %s\nstderr %s", args, code, so, se)
		}
	}
	for _, args := range [][]string{{"help", "call"}, {"call", "--help"}, {"--help", "call"}} {
		so, se, code := chio(nil, args...)
		if code != cli.ExitOK || se != "" || !strings.HasPrefix(so, "usage: chio call SERVER TOOL [flags]") || !strings.Contains(so, "--args JSON") {
			t.Fatalf("%q: exit %d\nstdout %s\nstderr %s", args, code, so, se)
		}
	}
	// A group lists its commands.
	so, _, code := chio(nil, "approval", "--help")
	if code != cli.ExitOK || !strings.Contains(so, "approval cancel ID") || !strings.Contains(so, "approval batch create") {
		t.Fatalf("group help: %d\n%s", code, so)
	}
}

// Every usage mistake is one line on stderr that names it, exit 2, and
// nothing on stdout.
func TestUsageMistakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "chio: missing command"},
		{[]string{"frobnicate"}, `chio: unknown command "frobnicate" (see 'chio help')`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"approval"}, "chio approval: missing command; one of: approve, batch, cancel, deny, list, show, watch"},
		{[]string{"approval", "frob"}, `chio approval: unknown command "frob"`},
		{[]string{"receipt", "list", "--bogus"}, "chio receipt list: unknown flag --bogus (see 'chio receipt list --help')"},
		{[]string{"receipt", "list", "--limit", "many"}, `chio receipt list: invalid value "many" for flag --limit`},
		{[]string{"receipt", "list", "--url"}, "chio receipt list: flag --url needs a value"},
		{[]string{"approval", "show"}, "chio approval show: missing ID (usage: chio approval show ID [flags])"},
		{[]string{"approval", "show", "ar-1", "ar-2"}, `chio approval show: unexpected argument "ar-2"`},
		{[]string{"call", "demo"}, "chio call: missing TOOL"},
		{[]string{"keygen", "extra"}, `chio keygen: unexpected argument "extra"`},
		{[]string{"--nope", "receipt", "list"}, "chio: unknown global flag --nope"},
		{[]string{"--url"}, "chio: flag --url needs a value"},
		{[]string{"completion", "powershell"}, `chio completion: unknown shell "powershell"`},
		{[]string{"receipt", "list", "--output", "yaml"}, "--output must be table, json or jsonl"},
	} {
		so, se, code := chio(nil, c.args...)
		lines := strings.Split(strings.TrimSpace(se), "\n")
		if code != cli.ExitUsage || so != "" || !strings.Contains(lines[len(lines)-1], c.want) || (len(c.args) > 0 && len(lines) != 1) {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q\nwant one line containing %q", c.args, code, so, se, c.want)
		}
	}
}

// --url and --output are global: before the command or after it.
func TestGlobalFlagsBeforeOrAfter(t *testing.T) {
	// receipt list checks each receipt's signature with the key /healthz
	// names: the server serves one signed receipt.
	kernelKey := keys.FromSeed(bytes.Repeat([]byte{5}, 32))
	rc, err := receipt.Sign(kernelKey, &receipt.Receipt{ID: "rc-1", Seq: 1, Timestamp: 1700000000000, RequestID: "req-1", CapabilityID: "cap-1",
		Subject: "ed25519:00", ToolServer: "demo", ToolName: "echo", Action: "echo", ParameterHash: "00", Decision: receipt.Decision{Verdict: receipt.Allow},
		Metadata: map[string]any{}, PolicyHash: "00"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"kernel_key":"` + kernelKey.Public().String() + `"}`))
			return
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Write([]byte(`{"receipts":[` + string(rc) + `],"next_cursor":""}`))
	}))
	defer srv.Close()
	env := map[string]string{"CHIO_URL": "http://127.0.0.1:1"} // never used: the flag wins
	for _, args := range [][]string{
		{"--url", srv.URL, "--output", "json", "receipt", "list"},
		{"--url=" + srv.URL, "receipt", "list", "--output=json"},
		{"receipt", "list", "--url", srv.URL, "--output", "json"},
		{"--output", "table", "receipt", "list", "--url", srv.URL, "--output", "json"}, // the later one wins
	} {
		so, se, code := chio(env, args...)
		var arr []json.RawMessage
		if code != cli.ExitOK || json.Unmarshal([]byte(so), &arr) != nil || len(arr) != 1 {
			t.Fatalf("%q: exit %d\nstdout %s\nstderr %s", args, code, so, se)
		}
	}
	mu.Lock()
	if len(paths) != 4 || paths[0] != "/v1/receipts" {
		t.Fatalf("requests: %v", paths)
	}
	mu.Unlock()
	// A command that talks to no server is not troubled by a global --url.
	key := filepath.Join(t.TempDir(), "k.pem")
	if so, se, code := chio(nil, "--url", srv.URL, "--output", "json", "keygen", "--out", key); code != 0 || !strings.HasPrefix(so, "ed25519:") {
		t.Fatalf("keygen with global flags: %d %s %s", code, so, se)
	}
	// After the command, a flag it does not take is a mistake.
	if _, se, code := chio(nil, "keygen", "--out", key+"2", "--output", "json"); code != cli.ExitUsage || !strings.Contains(se, "unknown flag --output") {
		t.Fatalf("keygen --output: %d %s", code, se)
	}
}
