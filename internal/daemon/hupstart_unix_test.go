//go:build unix

package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// chiod writes its pid to chiod.pid as soon as it holds the data dir, and
// the docs say `kill -HUP $(cat chiod.pid)` reloads it (systemctl reload
// does the same). A SIGHUP that arrives while chiod is still starting
// (here: waiting for its PostgreSQL store) must not kill it: killed, it
// would leave the kernel key, tokens and pid file of a start that never
// finished. The test runs chiod in a child process (this test binary), a
// fake PostgreSQL that accepts chiod's connection and never answers, sends
// the child SIGHUP once chiod is connecting, then drops the connection:
// chiod must refuse the start itself and leave no data dir behind.
func TestSIGHUPDuringStartDoesNotKillChiod(t *testing.T) {
	if dir := os.Getenv("CHIO_TEST_HUPSTART_DIR"); dir != "" {
		cfg := filepath.Join(dir, "chio.toml")
		err := daemon.Run(context.Background(), daemon.Options{ConfigPath: cfg, Listen: "127.0.0.1:0",
			DataDir: filepath.Join(dir, "data"), Out: os.Stderr, Getenv: func(string) string { return "" }})
		fmt.Printf("RUN RETURNED: %v\n", err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b) + "\n[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_TEST_HUPSTART_DSN\"\n"
	if err := os.WriteFile(filepath.Join(dir, "chio.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGHUPDuringStartDoesNotKillChiod$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CHIO_TEST_HUPSTART_DIR="+dir,
		"CHIO_TEST_HUPSTART_DSN=postgres://chio:x@"+ln.Addr().String()+"/chio?sslmode=disable&connect_timeout=30")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// chiod connects to its store after taking the data dir's lock and
	// writing its key and tokens.
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The signal is delivered before the connection drops: chiod is then
	// killed, or refuses the start for want of a database.
	ln.Close()
	conn.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("a SIGHUP while chiod was starting killed it (%v)\n%s", ws.Signal(), out.String())
		}
	}
	if !strings.Contains(out.String(), "RUN RETURNED: refusing to start") {
		t.Fatalf("chiod did not refuse the start: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start left its data dir behind (%v)\n%s", err, out.String())
	}
}
