package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// The in-process bench runs both workloads and prints a ratio; the figures
// themselves are not asserted (benchmarks print, tests check correctness).
// It runs with chiod's GC target, and with --no-fsync it says so.
func TestBenchInProcess(t *testing.T) {
	for _, extra := range [][]string{nil, {"--no-fsync"}} {
		var so, se bytes.Buffer
		args := append([]string{"bench", "--in-process", "--calls", "300", "--rounds", "2", "--concurrency", "16", "--dir", t.TempDir()}, extra...)
		code := cli.Main(args, &cli.Env{Stdout: &so, Stderr: &se, Getenv: func(string) string { return "" }})
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, so.String(), se.String())
		}
		for _, re := range []string{`GC target 400%`, `round 1: allow path [\d,]+ decisions/s .* raw sign\+commit [\d,]+ receipts/s`,
			`  allow path: commit every [\d.]+ ms with \d+ calls: run [\d.]+, sign [\d.]+, receipts [\d.]+, write\+fsync [\d.]+ ms`,
			`  raw loop:   commit every `, `round 2: `, `median: allow path [\d,]+ decisions/s, raw loop [\d,]+ receipts/s: \d+% of the raw loop`} {
			if !regexp.MustCompile(re).MatchString(so.String()) {
				t.Errorf("%v: output lacks %s:\n%s", extra, re, so.String())
			}
		}
		if off := strings.Contains(so.String(), "fsync OFF"); off != (extra != nil) {
			t.Errorf("%v: fsync-off notice shown: %v\n%s", extra, off, so.String())
		}
	}
}

// Over HTTP every call must come back 200 (allowed and executed), closed
// and open loop.
func TestBenchHTTP(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: "[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n", Serve: true})
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": w.AdminToken}
	for _, args := range [][]string{{"--duration", "300ms", "--concurrency", "4"}, {"--duration", "300ms", "--rate", "200", "--raw", "--calls", "200"}} {
		var so, se bytes.Buffer
		code := cli.Main(append([]string{"bench"}, args...), &cli.Env{Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, so.String(), se.String())
		}
		if !strings.Contains(so.String(), "errors: 0, statuses: map[200:") || !strings.Contains(so.String(), "latency: p50") {
			t.Errorf("%v:\n%s", args, so.String())
		}
		// chiod's own view of its commits over the run, from /metrics.
		committer := regexp.MustCompile(`chiod's committer: [\d,]+ commits of [\d.]+ calls, [\d.]+ ms each, busy \d+% of the run \(run [\d.]+, sign [\d.]+, receipts [\d.]+, write\+fsync [\d.]+ ms\)`)
		if !committer.MatchString(so.String()) {
			t.Errorf("%v: no committer line:\n%s", args, so.String())
		}
	}
}

// Where /metrics cannot be read, the bench still runs and says so.
func TestBenchHTTPWithoutMetrics(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: "[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n", Serve: true})
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.Error(rw, "metrics are elsewhere", http.StatusNotFound)
			return
		}
		w.API.ServeHTTP(rw, r)
	}))
	defer front.Close()
	env := map[string]string{"CHIO_URL": front.URL, "CHIO_ADMIN_TOKEN": w.AdminToken}
	var so, se bytes.Buffer
	code := cli.Main([]string{"bench", "--duration", "200ms", "--concurrency", "2"}, &cli.Env{Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
	if code != cli.ExitOK || !strings.Contains(so.String(), "chiod's committer: not shown (") {
		t.Fatalf("exit %d\n%s\n%s", code, so.String(), se.String())
	}
}
