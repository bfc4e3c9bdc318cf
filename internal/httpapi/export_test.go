package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// failingExport is a store whose export fails after writing the first
// `after` bytes of the real export.
type failingExport struct {
	kernel.Store
	after int
}

func (s failingExport) Export(ctx context.Context, w io.Writer) error {
	var buf bytes.Buffer
	if err := s.Store.(receipt.Exporter).Export(ctx, &buf); err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()[:min(s.after, buf.Len())]); err != nil {
		return err
	}
	return errors.New("disk read error")
}

// An export that fails mid-stream must not reach the client as a complete
// body: the response is cut, so reading it fails, and neither the verifier
// nor anyone saving the file mistakes the prefix for the whole export. A
// failure before any byte is an ordinary error answer.
func TestExportFailureIsVisibleToTheClient(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t)
	serve := func(after int) *httptest.Server {
		api, err := httpapi.New(httpapi.Config{Kernel: f.k, Store: failingExport{f.k.Store(), after}, AdminToken: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		return httptest.NewServer(api)
	}

	srv := serve(0)
	defer srv.Close()
	f.srv = srv
	if code, body := f.get(t, "/v1/export", "admin"); code == http.StatusOK || !strings.Contains(string(body), "disk read error") {
		t.Fatalf("failure before any byte: %d %s", code, body)
	}

	// Cut after the header and a few receipts (a prefix that parses, still
	// in the server's response buffer), and just before the end (status and
	// most of the body already sent): either way the client's request or
	// its read of the body fails.
	_, whole := f.get(t, "/v1/export", "admin")
	for _, after := range []int{1500, len(whole) - 10} {
		cut := serve(after)
		defer cut.Close()
		req, _ := http.NewRequest("GET", cut.URL+"/v1/export", nil)
		req.Header.Set("Authorization", "Bearer admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // cut before the status line: visibly failed
		}
		rep, err := receipt.VerifyExport(resp.Body, receipt.VerifyOptions{KernelKey: auditKernelKey.Public()})
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && err == nil {
			t.Fatalf("export cut after %d of %d bytes read to a clean end; report OK=%v", after, len(whole), rep.OK())
		}
	}
}

// GET /v1/checkpoints/latest covers every receipt committed before it (it
// signs one if the log grew), not only those the last periodic checkpoint
// did: the auditor pins it before an export.
func TestLatestCheckpointCoversEveryCommittedReceipt(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t) // 7 receipts; the fixture's log signs only when a route asks
	code, body := f.get(t, "/v1/checkpoints/latest", "reader")
	cp, err := receipt.VerifyCheckpoint(body, auditKernelKey.Public())
	if code != 200 || err != nil || cp.TreeSize != 7 {
		t.Fatalf("latest: %d %v %s", code, err, body)
	}
}

// bigExport is a store whose export writes until its writer fails, and
// reports on done when it returns.
type bigExport struct {
	kernel.Store
	done chan error
}

func (s bigExport) Export(ctx context.Context, w io.Writer) error {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var err error
	for i := 0; i < 1024 && err == nil; i++ { // at most 64 MiB
		_, err = w.Write(chunk)
	}
	s.done <- err
	return err
}

// Readers that stop reading must not hold exports (on PostgreSQL, pooled
// connections decisions need) for ever: at most MaxConcurrentExports run at
// once, and each write is bounded by StreamWriteTimeout, so a stalled
// export ends and frees its slot. (The write timeout here outlasts
// ExportSlotWait, as the default does: a refused export waits that long
// for its credential's share, and a stall shorter than the wait would be
// cut before the refusal.)
func TestStalledExportsAreBoundedInNumberAndTime(t *testing.T) {
	f := newAuditFixture(t)
	done := make(chan error, 8)
	api, err := httpapi.New(httpapi.Config{Kernel: f.k, Store: bigExport{f.k.Store(), done}, AdminToken: "admin",
		ReadToken: "reader", StreamWriteTimeout: httpapi.ExportSlotWait + 3*time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	get := func(token string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/export", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	// One export per credential (MaxExportsPerCredential): the two tokens
	// take every slot.
	tokens := []string{"admin", "reader"}
	var stalled []*http.Response
	for i := range httpapi.MaxConcurrentExports {
		resp, err := get(tokens[i])
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("export: %v %v", resp, err)
		}
		stalled = append(stalled, resp) // never read
	}
	defer func() {
		for _, r := range stalled {
			r.Body.Close()
		}
	}()
	resp, err := get("admin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("export beyond the limit: %d, want 429", resp.StatusCode)
	}
	for range httpapi.MaxConcurrentExports {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a stalled export ended without error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a stalled reader held its export past the write timeout")
		}
	}
	// Their slots are free again.
	time.Sleep(100 * time.Millisecond)
	resp, err = get("admin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export after the stalled ones ended: %d", resp.StatusCode)
	}
}

// TestExportsPerCredential: one credential (a leaked reader token, a
// looping script) cannot hold every export slot: beyond its share its
// export is refused with 429 and Retry-After, and another credential's
// export still runs.
func TestExportsPerCredential(t *testing.T) {
	f := newAuditFixture(t)
	done := make(chan error, 8)
	// Exports that are never read stay held for the whole test.
	api, err := httpapi.New(httpapi.Config{Kernel: f.k, Store: bigExport{f.k.Store(), done}, AdminToken: "admin",
		ReadToken: "reader", StreamWriteTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	get := func(token string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/export", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var held []*http.Response
	defer func() {
		for _, r := range held {
			r.Body.Close()
		}
	}()
	var refusal *http.Response
	for range httpapi.MaxConcurrentExports {
		resp := get("reader")
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			refusal = resp
			break
		}
		held = append(held, resp) // never read
	}
	admin := get("admin")
	admin.Body.Close()
	if admin.StatusCode != http.StatusOK {
		t.Errorf("the admin's export, with the reader token holding %d: %d", len(held), admin.StatusCode)
	}
	if len(held) != httpapi.MaxExportsPerCredential || refusal == nil ||
		refusal.StatusCode != http.StatusTooManyRequests || refusal.Header.Get("Retry-After") == "" {
		t.Errorf("the reader token held %d exports (its share is %d); the next: %+v", len(held), httpapi.MaxExportsPerCredential, refusal)
	}
}
