package daemon_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// The first errors a newcomer meets say what to do, not only what failed.

// chiod run with no -config, where there is no chio.toml (the README's
// quick start forgot, a typo in the path), says to name the policy file.
func TestMissingPolicySaysToPassConfig(t *testing.T) {
	dir := t.TempDir()
	err := daemon.Run(context.Background(), daemon.Options{ConfigPath: filepath.Join(dir, "chio.toml"),
		Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), Out: io.Discard, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "-config") {
		t.Fatalf("a missing policy file: %v; want it to say to pass -config FILE", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(serr) {
		t.Fatalf("the refused start made the data dir: %v", serr)
	}
}

// chiod whose listen address is taken (a chiod left running, another
// program) says to stop it or choose another address, and creates nothing.
func TestListenInUseSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	err = daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: ln.Addr().String(),
		DataDir: filepath.Join(dir, "data"), Out: io.Discard, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "-listen") {
		t.Fatalf("a listen address in use: %v; want it to name the address and say to choose another with -listen", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(serr) {
		t.Fatalf("the refused start left the data dir: %v", serr)
	}
}

// A bearer token from the environment that is too short says how to make
// one that is not (as docs/platform.md and examples/deploy/chiod.env do).
func TestShortTokenSaysHowToMakeOne(t *testing.T) {
	env := map[string]string{"CHIO_ADMIN_TOKEN": "changeme"}
	err := daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0",
		DataDir: filepath.Join(t.TempDir(), "data"), Out: io.Discard, Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "CHIO_ADMIN_TOKEN is shorter than 32") || !strings.Contains(err.Error(), "openssl rand -hex 32") {
		t.Fatalf("a short CHIO_ADMIN_TOKEN: %v; want it to say how to make one (openssl rand -hex 32)", err)
	}
}
