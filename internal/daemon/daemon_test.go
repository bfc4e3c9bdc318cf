package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

func quickstart() string { return filepath.Join("..", "..", "examples", "policies", "quickstart.toml") }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// running is a chiod run in this process.
type running struct {
	url  string
	out  *syncBuffer
	stop func() error
}

func start(t *testing.T, o daemon.Options) *running {
	t.Helper()
	r := &running{out: &syncBuffer{}}
	if o.ConfigPath == "" {
		o.ConfigPath = quickstart()
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	o.Out = r.out
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	ready := make(chan string, 1)
	o.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, o) }()
	select {
	case addr := <-ready:
		r.url = "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("chiod did not start: %v\n%s", err, r.out)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("chiod did not start:\n%s", r.out)
	}
	var once sync.Once
	var err error
	r.stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { r.stop() })
	return r
}

// A second chiod on the same data dir stops at once and names the first.
func TestOneChiodPerDataDir(t *testing.T) {
	dir := t.TempDir()
	first := start(t, daemon.Options{DataDir: dir})
	pidFile := filepath.Join(dir, daemon.PIDFile)
	pid, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file: %q %v", pid, err)
	}
	began := time.Now()
	err = daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir,
		Out: io.Discard, Getenv: func(string) string { return "" }})
	if !errors.Is(err, daemon.ErrDataDirInUse) || !strings.Contains(err.Error(), "(pid "+strconv.Itoa(os.Getpid())+")") ||
		time.Since(began) > 5*time.Second {
		t.Fatalf("second chiod: %v after %s", err, time.Since(began))
	}
	// The first one was not disturbed.
	if resp, err := http.Get(first.url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first chiod: %v", err)
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file left after a clean stop: %v", err)
	}
	// Now the dir is free.
	start(t, daemon.Options{DataDir: dir})
}

// The admin and reader tokens are generated once (0600) and reused, and
// the log says which.
func TestTokensGeneratedThenReused(t *testing.T) {
	dir := t.TempDir()
	r := start(t, daemon.Options{DataDir: dir})
	for _, f := range []string{daemon.AdminTokenFile, daemon.ReadTokenFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi, err)
		}
	}
	log := r.out.String()
	if !strings.Contains(log, `msg="CHIO_ADMIN_TOKEN not set; generated a token"`) || !strings.Contains(log, `msg="CHIO_READ_TOKEN not set; generated a token"`) ||
		!strings.Contains(log, "CHIO_READ_TOKEN=$(cat "+filepath.Join(dir, daemon.ReadTokenFile)+")") ||
		!strings.Contains(log, "kill -HUP $(cat "+filepath.Join(dir, daemon.PIDFile)+")") {
		t.Fatalf("first start:\n%s", log)
	}
	admin, _ := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile))
	r.stop()
	r = start(t, daemon.Options{DataDir: dir})
	log = r.out.String()
	if strings.Contains(log, "generated") || !strings.Contains(log, `msg="CHIO_ADMIN_TOKEN not set; using the token in admin.token"`) {
		t.Fatalf("restart:\n%s", log)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile)); !bytes.Equal(admin, again) {
		t.Fatal("the admin token changed on restart")
	}
	// The reader token reads, and is not an admin.
	read, _ := os.ReadFile(filepath.Join(dir, daemon.ReadTokenFile))
	if code := get(t, r.url+"/approvals/pending", strings.TrimSpace(string(read))); code != 200 {
		t.Fatalf("reader token: %d", code)
	}
	req, _ := http.NewRequest("POST", r.url+"/v1/capabilities", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(read)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("reader token on an admin route: %v %v", resp, err)
	}
}

func TestTokensFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"CHIO_ADMIN_TOKEN": strings.Repeat("a", 32), "CHIO_READ_TOKEN": strings.Repeat("r", 32)}
	r := start(t, daemon.Options{DataDir: dir, Getenv: func(k string) string { return env[k] }})
	if _, err := os.Stat(filepath.Join(dir, daemon.ReadTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a token file was written although the environment set it: %v", err)
	}
	if code := get(t, r.url+"/approvals/pending", env["CHIO_READ_TOKEN"]); code != 200 {
		t.Fatalf("reader token: %d", code)
	}
	r.stop()
	env["CHIO_READ_TOKEN"] = "short"
	err := daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir, Out: io.Discard,
		Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "CHIO_READ_TOKEN is shorter than 32") {
		t.Fatalf("short token: %v", err)
	}
	// A reader token equal to the admin token would carry the admin's
	// powers: chiod refuses to start.
	env["CHIO_READ_TOKEN"] = env["CHIO_ADMIN_TOKEN"]
	err = daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir, Out: io.Discard,
		Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "CHIO_READ_TOKEN equals the admin token") {
		t.Fatalf("reader token equal to the admin token: %v", err)
	}
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// /metrics needs the reader or admin token unless -metrics-auth none.
func TestMetricsAuth(t *testing.T) {
	dir := t.TempDir()
	r := start(t, daemon.Options{DataDir: dir})
	read, _ := os.ReadFile(filepath.Join(dir, daemon.ReadTokenFile))
	if code := get(t, r.url+"/metrics", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code := get(t, r.url+"/metrics", strings.TrimSpace(string(read))); code != 200 {
		t.Fatalf("reader token: %d", code)
	}
	r.stop()
	r = start(t, daemon.Options{DataDir: dir, MetricsAuth: daemon.MetricsAuthNone})
	if code := get(t, r.url+"/metrics", ""); code != 200 {
		t.Fatalf("-metrics-auth none: %d", code)
	}
	r.stop()
	err := daemon.Run(context.Background(), daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir, Out: io.Discard,
		MetricsAuth: "open", Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "-metrics-auth must be token or none") {
		t.Fatalf("bad -metrics-auth: %v", err)
	}
}
