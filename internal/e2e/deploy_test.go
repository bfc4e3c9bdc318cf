package e2e

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unitValue returns the value of key in a systemd unit's text.
func unitValue(t *testing.T, unit, key string) string {
	t.Helper()
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	t.Fatalf("unit has no %s", key)
	return ""
}

// examples/deploy runs as written: the unit's ExecStart with its
// environment file serves, writes the pid file that ExecReload's signal
// reaches, and stops cleanly on the unit's KillSignal.
func TestDeployExamples(t *testing.T) {
	dir := filepath.Join(repoRoot(), "examples", "deploy")
	unitBytes, err := os.ReadFile(filepath.Join(dir, "chiod.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(unitBytes)
	if unitValue(t, unit, "EnvironmentFile") != "/etc/chio/chiod.env" || unitValue(t, unit, "KillSignal") != "SIGTERM" ||
		unitValue(t, unit, "StateDirectory") != "chio" {
		t.Fatal("unit: EnvironmentFile, KillSignal or StateDirectory changed; update this test and docs/platform.md")
	}
	// ExecStart, with the unit's paths mapped into the test.
	data := filepath.Join(t.TempDir(), "var-lib-chio")
	args := strings.Fields(unitValue(t, unit, "ExecStart"))
	if args[0] != "/usr/local/bin/chiod" {
		t.Fatalf("ExecStart runs %s", args[0])
	}
	for i, a := range args {
		switch a {
		case "/etc/chio/chio.toml":
			args[i] = quickstart()
		case "/var/lib/chio":
			args[i] = data
		}
	}
	cmd := exec.Command(filepath.Join(binDir, "chiod"), append(args[1:], "-listen", "127.0.0.1:0")...)
	// The environment file, as systemd reads it: KEY=value lines.
	env, err := os.ReadFile(filepath.Join(dir, "chiod.env"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, l := range strings.Split(string(env), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if !strings.Contains(l, "=") {
				t.Fatalf("chiod.env: %q is not KEY=value", l)
			}
			cmd.Env = append(cmd.Env, l)
		}
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	waitFor := func(what string) string {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("chiod ended before %q", what)
				}
				if strings.Contains(l, what) {
					return l
				}
			case <-deadline:
				t.Fatalf("no %q from chiod", what)
			}
		}
	}
	serving := waitFor(`"chiod serving"`)
	addr := addrRE.FindStringSubmatch(serving)[1]

	// The pid file names this chiod; ExecReload's kill reaches it alone.
	pid, err := os.ReadFile(filepath.Join(data, "chiod.pid"))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("pid file %q (%v), chiod is %d", pid, err, cmd.Process.Pid)
	}
	reload := strings.Fields(strings.ReplaceAll(unitValue(t, unit, "ExecReload"), "$MAINPID", strings.TrimSpace(string(pid))))
	if out, err := exec.Command(reload[0], reload[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("ExecReload: %v %s", err, out)
	}
	waitFor("policy reloaded")
	// CHIO_METRICS_AUTH=token from the environment file: /metrics needs the
	// generated reader token.
	if resp, err := http.Get("http://" + addr + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("metrics without a token: %v %v", resp, err)
	}
	read, err := os.ReadFile(filepath.Join(data, "read.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(read)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics with the reader token: %v %v", resp, err)
	}
	// KillSignal: a clean stop that leaves no pid file behind.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("chiod exited: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chiod did not stop within TimeoutStopSec")
	}
	if _, err := os.Stat(filepath.Join(data, "chiod.pid")); !os.IsNotExist(err) {
		t.Fatalf("pid file after stop: %v", err)
	}
}
