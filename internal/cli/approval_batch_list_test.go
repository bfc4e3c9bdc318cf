package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// chiod answers GET /approvals/batch a page at a time (every batch ever
// created is kept); `chio approval batch list` reads every page.
func TestBatchListReadsEveryPage(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1001 // more than one page of the CLI's 1,000
	err = w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		for i := range n {
			raw := signBatchToken(t, lead, func(b *approval.BatchToken) { b.ID = fmt.Sprintf("ba-page-%04d", i) })
			var tok approval.BatchToken
			if err := json.Unmarshal(raw, &tok); err != nil {
				return err
			}
			if err := tx.PutBatch(&approval.Batch{Token: &tok, Raw: raw, CreatedAt: time.Now().UnixMilli()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "batch", "list", "--output", "jsonl")
	if code != 0 {
		t.Fatalf("list: %d %s", code, se)
	}
	lines := strings.Split(strings.TrimSpace(so), "\n")
	if len(lines) != n || !strings.Contains(lines[0], "ba-page-0000") || !strings.Contains(lines[n-1], fmt.Sprintf("ba-page-%04d", n-1)) {
		t.Fatalf("batch list printed %d batches, want all %d in id order", len(lines), n)
	}
}

// A standing approval signed to start later covers nothing until then: the
// table says from when it applies, not only until when, so an auditor does
// not read a batch that starts next week as live now (or the reverse).
func TestBatchListShowsNotBefore(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	raw := signBatchToken(t, lead, func(b *approval.BatchToken) {
		b.ID = "ba-later"
		b.NotBefore, b.NotAfter = from.Unix(), from.Add(24*time.Hour).Unix()
	})
	storeLegacyBatch(t, w, raw)
	so, se, code := w.run(adminEnv(), "approval", "batch", "list")
	if code != 0 {
		t.Fatalf("list: %d %s", code, se)
	}
	if !strings.Contains(so, "FROM") || !strings.Contains(so, "2031-03-04T05:06:07Z") {
		t.Fatalf("batch list does not show when the batch starts (2031-03-04T05:06:07Z):\n%s", so)
	}
}
