package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/receipt"
)

// bigExportWorld serves a bbolt store holding n synthetic receipts (far
// more bytes than the loopback socket buffers hold, so an export that is
// not read stays in progress).
func bigExportWorld(t *testing.T, n int) *testkit.World {
	t.Helper()
	dir := t.TempDir()
	key := keys.FromSeed(bytes.Repeat([]byte{9}, 32))
	s, err := boltstore.Open(filepath.Join(dir, "chio.db"), key, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = synth.Generate(context.Background(), s, key, synth.Config{Receipts: n, Days: 1, Seed: 3})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// The log signs the checkpoint each export carries.
	return testkit.NewWorld(t, testkit.Options{PolicyTOML: synth.Policy(3, dir), DataDir: dir, KernelKey: testkit.Key(key),
		Log: receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour}), Dispatcher: echoDispatcher{}, Serve: true,
		AdminToken: "admin", ReadToken: "reader"})
}

// startExport GETs /v1/export as token over a connection of its own and
// reads the first bytes of the body: the export is streaming. The
// connection's receive buffer is fixed small (no autotuning), so the
// export stays in progress while the body is not read.
func startExport(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/export", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("export: %d %s", resp.StatusCode, body)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	return resp
}

// An auditor whose export is cut (Ctrl-C, a dropped connection) and who
// retries at once must get a new export, not 429 until chiod notices the
// dead stream: the dead client's slot is freed as soon as it is gone.
func TestExportSlotFreedWhenClientHangsUp(t *testing.T) {
	w := bigExportWorld(t, 12000)
	first := startExport(t, w.URL, "reader")
	first.Body.Close() // most of the export unread: the connection is closed

	retry := getExport(t, w.URL, "reader")
	defer retry.Body.Close()
	if retry.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(retry.Body)
		t.Fatalf("retry right after hanging up: %d Retry-After %q %s", retry.StatusCode, retry.Header.Get("Retry-After"), body)
	}
	// The retry is a whole export: its header, then a body that ends cleanly.
	br := bufio.NewReader(retry.Body)
	line, err := br.ReadBytes('\n')
	var head receipt.ExportHeader
	if err != nil || json.Unmarshal(line, &head) != nil || head.Format != receipt.ExportFormat || head.Receipts < 12000 {
		t.Fatalf("the retried export's header: %v %s", err, line)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the retried export was cut: %v", err)
	}
}

// A credential whose export is live (its client connected and reading)
// keeps its slot: a second export of the same credential is refused with
// 429 and Retry-After, and the first is not disturbed.
func TestLiveExportKeepsItsSlot(t *testing.T) {
	w := bigExportWorld(t, 12000)
	first := startExport(t, w.URL, "reader")
	defer first.Body.Close()

	second := getExport(t, w.URL, "reader")
	second.Body.Close()
	if second.StatusCode != http.StatusTooManyRequests || second.Header.Get("Retry-After") != "10" {
		t.Fatalf("second export while the first is live: %d Retry-After %q", second.StatusCode, second.Header.Get("Retry-After"))
	}
	if n, err := io.Copy(io.Discard, first.Body); err != nil {
		t.Fatalf("the live export, after the refused one: %v after %d more bytes", err, n)
	}
}

func getExport(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/export", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
