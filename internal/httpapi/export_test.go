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
