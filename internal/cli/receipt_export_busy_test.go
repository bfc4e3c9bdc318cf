package cli_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/receipt"
)

// An export refused because the token already has one in progress (chiod
// serves one per token) must say so plainly, with when to try again, not
// "unavailable (429)" and no delay; a proxy's 429 page is not dumped.
func TestExportRefusedForNowSaysWhenToRetry(t *testing.T) {
	dir := t.TempDir()
	key := keys.FromSeed(bytes.Repeat([]byte{24}, 32))
	s, err := boltstore.Open(filepath.Join(dir, "chio.db"), key, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Far more than the socket buffers hold: an export not read stays in
	// progress.
	_, err = synth.Generate(context.Background(), s, key, synth.Config{Receipts: 12000, Days: 1, Seed: 5})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: synth.Policy(5, dir), DataDir: dir, KernelKey: testkit.Key(key),
		Log: receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour}), Serve: true, AdminToken: "admin", ReadToken: "reader"})

	// The reader token's export in progress (another terminal, a script):
	// a small fixed receive buffer, and its body is not read.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}
	req, _ := http.NewRequest("GET", w.URL+"/v1/export", nil)
	req.Header.Set("Authorization", "Bearer reader")
	held, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial}}).Do(req)
	if err != nil || held.StatusCode != http.StatusOK {
		t.Fatalf("the export in progress: %v %v", held, err)
	}
	defer held.Body.Close()
	if _, err := io.ReadFull(held.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, args := range [][]string{
		{"receipt", "export", "--out", out},
		{"receipt", "verify", "--all", "--kernel-key", key.Public().String()},
	} {
		_, errOut, code := chioAt(w.URL, args...)
		if code != cli.ExitError || !strings.Contains(errOut, "chiod refused /v1/export for now (429)") ||
			!strings.Contains(errOut, "export in progress") || !strings.Contains(errOut, "try again in 10s") {
			t.Errorf("%v while the token's export is in progress: exit %d\n%s", args, code, errOut)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s: %v", out, err)
	}

	// Once chiod is shutting down (CloseStreams is what its graceful
	// shutdown calls first), the same export is refused as unavailable:
	// no "for now", no "try again in 10s" from a chiod that is going away.
	w.API.CloseStreams()
	for _, args := range [][]string{
		{"receipt", "export", "--out", out},
		{"receipt", "verify", "--all", "--kernel-key", key.Public().String()},
	} {
		_, errOut, code := chioAt(w.URL, args...)
		if code != cli.ExitError || errOut != "chio: unavailable (503): chiod is shutting down; export again once it is back up (or from another replica)\n" {
			t.Errorf("%v while chiod shuts down: exit %d\n%s", args, code, errOut)
		}
	}

	// A proxy's 429: its page is not shown; its Retry-After is.
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Retry-After", "30")
		rw.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(rw, "<html><body><h1>429 Too Many Requests</h1>"+strings.Repeat("<p>slow down</p>", 500)+"</body></html>")
	}))
	defer proxy.Close()
	_, errOut, code := chioAt(proxy.URL, "receipt", "export", "--out", out)
	if code != cli.ExitError || strings.Contains(errOut, "<html>") || !strings.Contains(errOut, "try again in 30s") {
		t.Errorf("a proxy's 429: exit %d\n%s", code, errOut)
	}
}
