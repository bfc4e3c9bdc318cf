//go:build linux

package daemon_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

// A stdio MCP server is another program, run as chiod's user: it gets none
// of chiod's secrets in its environment (docs/mcp.md). Nor may it read
// them from chiod's: /proc/<chiod's pid>/environ is readable by any
// process of the same user unless chiod is not dumpable. The test runs
// chiod in a child test process whose environment (fixed at its exec, as
// systemd's EnvironmentFile fixes chiod's) holds a DSN with a password;
// its stdio server copies /proc/$PPID/environ to a file.
func TestStdioServerCannotReadChiodEnvironment(t *testing.T) {
	const secret = "s3cret-pg-password"
	if dir := os.Getenv("CHIO_TEST_ENVIRON_DIR"); dir != "" {
		runChiodWithProbe(t, dir)
		return
	}
	dir := t.TempDir()
	argv := []string{os.Args[0], "-test.run=^TestStdioServerCannotReadChiodEnvironment$", "-test.count=1", "-test.v"}
	if os.Geteuid() == 0 {
		// chiod runs as a user of its own, and root reads any process's
		// environment: run chiod (this test binary) and its server as
		// nobody, from a directory nobody may use.
		dir, argv = asNobody(t, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "CHIO_TEST_ENVIRON_DIR="+dir, "CHIO_PG_DSN=postgres://chio:"+secret+"@db.internal/chio")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chiod with the probe server: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		t.Fatalf("the probe server did not report: %v\n%s", err, out)
	}
	if strings.Contains(string(got), secret) {
		t.Errorf("a stdio MCP server read chiod's environment, with the DSN's password, from /proc/$PPID/environ: %q", got)
	}
}

// runChiodWithProbe runs chiod (in this process: the child test) with a
// stdio MCP server that copies its parent's environment into dir/environ,
// until it has.
func runChiodWithProbe(t *testing.T, dir string) {
	report := filepath.Join(dir, "environ")
	policy := filepath.Join(dir, "chio.toml")
	probe := `cat /proc/$PPID/environ > ` + report + `.tmp 2>&1; mv ` + report + `.tmp ` + report
	if err := os.WriteFile(policy, []byte(`[kernel]
listen = "127.0.0.1:7420"
data_dir = "`+filepath.Join(dir, "data")+`"

[[servers]]
id = "probe"
transport = "mcp"
command = ["sh", "-c", '`+probe+`']
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log syncBuffer
	go func() {
		done <- daemon.Run(ctx, daemon.Options{ConfigPath: policy, Listen: "127.0.0.1:0", Out: &log, Getenv: func(string) string { return "" }})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(report); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			cancel()
			t.Fatalf("no report from the probe server: %v\n%s", err, log.String())
		}
		select {
		case err := <-done:
			t.Fatalf("chiod stopped: %v\n%s", err, log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("chiod: %v\n%s", err, log.String())
	}
}

// asNobody returns a directory owned by nobody (uid 65534) and argv run as
// nobody through setpriv (util-linux), with the test binary copied where
// nobody may run it.
func asNobody(t *testing.T, argv []string) (string, []string) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("run as root, this test needs setpriv (util-linux) to run chiod as another user: %v", err)
	}
	dir, err := os.MkdirTemp("", "chio-environ-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.ReadFile(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	argv[0] = filepath.Join(dir, "daemon.test")
	if err := os.WriteFile(argv[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir, append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
}
