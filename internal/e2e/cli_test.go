package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// run runs a built binary with no CHIO_* environment.
func run(t *testing.T, dir, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHIO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

// The binary keeps the CLI conventions: help on stdout with exit 0, a
// usage mistake is one line on stderr with exit 2, global flags before the
// command.
func TestCLIConventions(t *testing.T) {
	dir := t.TempDir()
	so, se, code := run(t, dir, "chio", "--help")
	if code != 0 || se != "" || !strings.Contains(so, "usage: chio") {
		t.Fatalf("--help: %d %q %q", code, so, se)
	}
	so, se, code = run(t, dir, "chio", "approval", "show", "--help")
	if code != 0 || se != "" || !strings.HasPrefix(so, "usage: chio approval show ID [flags]") {
		t.Fatalf("approval show --help: %d %q %q", code, so, se)
	}
	so, se, code = run(t, dir, "chio", "frobnicate")
	if code != 2 || so != "" || strings.TrimSpace(se) != `chio: unknown command "frobnicate" (see 'chio help')` {
		t.Fatalf("frobnicate: %d %q %q", code, so, se)
	}
	// --url before the command reaches nothing listening: a transport
	// error (1), not a usage error.
	_, se, code = run(t, dir, "chio", "--url", "http://127.0.0.1:1", "receipt", "list")
	if code != 1 || !strings.Contains(se, "cannot reach chiod at http://127.0.0.1:1") {
		t.Fatalf("global --url: %d %q", code, se)
	}
	so, _, code = run(t, dir, "chio", "completion", "bash")
	if code != 0 || !strings.Contains(so, "complete -o default -F _chio chio") {
		t.Fatalf("completion: %d", code)
	}
	// The shipped policy cases pass through the binary, as in a platform
	// team's CI.
	so, se, code = run(t, repoRoot(), "chio", "policy", "test", "examples/policies/tests/quickstart.toml")
	if code != 0 || !strings.Contains(so, ", 0 failed") {
		t.Fatalf("policy test: %d %s %s", code, so, se)
	}
}

// A second chiod on the same data dir stops at once, naming the first.
func TestSecondChiodSameDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	first := startDaemon(t, quickstart(), data)
	pid, err := os.ReadFile(filepath.Join(data, "chiod.pid"))
	if err != nil || strings.TrimSpace(string(pid)) == "" {
		t.Fatalf("pid file: %q %v", pid, err)
	}
	began := time.Now()
	_, se, code := run(t, t.TempDir(), "chiod", "-config", quickstart(), "-listen", "127.0.0.1:0", "-data-dir", data)
	want := "chiod: refusing to start: data dir in use by another chiod (pid " + strings.TrimSpace(string(pid)) + ")"
	if code != 1 || !strings.Contains(se, want) || time.Since(began) > 10*time.Second {
		t.Fatalf("second chiod: %d after %s\n%s", code, time.Since(began), se)
	}
	if strings.TrimSpace(string(pid)) != strconv.Itoa(first.cmd.Process.Pid) {
		t.Fatalf("pid file %s, process %d", pid, first.cmd.Process.Pid)
	}
}
