package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain runs chiod's main in a child process when chiodArgsEnv holds
// its arguments (as JSON), so a test sees chiod's exit code and output.
func TestMain(m *testing.M) {
	if raw := os.Getenv(chiodArgsEnv); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			panic(err)
		}
		flag.CommandLine = flag.NewFlagSet("chiod", flag.ExitOnError)
		os.Args = append([]string{"chiod"}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const chiodArgsEnv = "CHIOD_TEST_MAIN_ARGS"

// runChiod runs chiod with args in dir and reports how it ended: its exit code
// (-1 when it served and had to be killed) and its output.
func runChiod(t *testing.T, dir string, args ...string) (code int, out string) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), chiodArgsEnv+"="+string(raw))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	served := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ready := false
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "chiod is ready") && !ready {
				ready = true
				served <- true
			}
		}
		served <- false
	}()
	select {
	case s := <-served:
		if s {
			_ = cmd.Process.Kill()
			<-served
			_ = cmd.Wait()
			return -1, b.String()
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-served
		_ = cmd.Wait()
		t.Fatalf("chiod %q neither served nor exited within 2 minutes; output:\n%s", args, b.String())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), b.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, b.String()
}

// chiod takes no positional argument: `chiod prod.toml` (the policy named
// without -config) or a flag after a stray word (`chiod -listen ADDR x
// -data-dir /srv/chio`) would otherwise be dropped, the flag package
// stopping at the first non-flag, and chiod would start on ./chio.toml and
// ./chio-data instead of what the operator named, saying nothing. It
// refuses the start (exit 2, naming the argument) and serves nothing.
func TestChiodRefusesPositionalArguments(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	qs, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// ./chio.toml: a policy the operator did not name.
	if err := os.WriteFile(filepath.Join(dir, "chio.toml"), qs, 0o644); err != nil {
		t.Fatal(err)
	}
	prod := filepath.Join(dir, "prod.toml")
	code, out := runChiod(t, dir, "-listen", "127.0.0.1:0", "-data-dir", filepath.Join(dir, "data"), prod)
	if code == -1 {
		t.Fatalf("chiod %s served ./chio.toml, dropping its argument; output:\n%s", prod, out)
	}
	if code != 2 || !strings.Contains(out, `unexpected argument "`+prod+`"`) || !strings.Contains(out, "-config") {
		t.Fatalf("chiod %s: exit %d, want 2 with `unexpected argument %q` and a hint at -config; output:\n%s", prod, code, prod, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Errorf("the refused start made its data dir")
	}
}

// A flag given twice is refused (exit 2, naming it), as chio refuses one
// (internal/cli/flag_once.go): the flag package keeps the last value
// without a word, so `chiod -config prod.toml … -config chio.toml` (a
// wrapper's flags before the operator's, a unit's ExecStart and a drop-in)
// served chio.toml though prod.toml was named.
func TestChiodRefusesAFlagGivenTwice(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	qs, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chio.toml"), qs, 0o644); err != nil {
		t.Fatal(err)
	}
	prod := filepath.Join(dir, "prod.toml")
	code, out := runChiod(t, dir, "-config", prod, "-listen", "127.0.0.1:0", "-data-dir", filepath.Join(dir, "data"), "-config", "chio.toml")
	if code == -1 {
		t.Fatalf("chiod -config %s … -config chio.toml served chio.toml; output:\n%s", prod, out)
	}
	if code != 2 || !strings.Contains(out, "-config") || !strings.Contains(out, "given more than once") {
		t.Fatalf("-config given twice: exit %d, want 2 naming -config as given more than once; output:\n%s", code, out)
	}
}

// A flag given an empty value is refused (exit 2, naming it), as chio
// refuses one (internal/cli/flag_empty.go): empty read as "not given", so
// `chiod -config prod.toml -data-dir "$CHIO_DATA"` with CHIO_DATA unset
// started a new deployment in the policy's ./chio-data (a new kernel key,
// an empty store) instead of the operator's data dir, saying nothing; an
// empty -listen or -config fell back the same way.
func TestChiodRefusesAnEmptyFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	qs, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chio.toml"), qs, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-config", "chio.toml", "-listen", "127.0.0.1:0", "-data-dir", ""},
		{"-config", "", "-listen", "127.0.0.1:0", "-data-dir", filepath.Join(dir, "data")},
	} {
		code, out := runChiod(t, dir, args...)
		if code == -1 {
			t.Errorf("chiod %q served with an empty flag taken for none; output:\n%s", args, out)
			continue
		}
		if code != 2 || !strings.Contains(out, "is empty") {
			t.Errorf("chiod %q: exit %d, want 2 saying the flag is empty; output:\n%s", args, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "chio-data")); err == nil {
		t.Errorf("a start with an empty -data-dir made the policy's ./chio-data")
	}
}
