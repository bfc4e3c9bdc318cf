package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// An approver (an insider, or a stolen approver key) signs an unlimited
// */* standing approval whose id carries a carriage return and ANSI
// erase/conceal sequences: printed raw by `chio approval batch list`, the
// admin deciding what to revoke would see a harmless one-call demo/echo
// row instead. The kernel refuses such a batch (its id must pass
// approval.ValidID, its patterns hold no control or format characters),
// and nothing is stored.
func TestBatchWithTerminalEscapesInIDOrPatternIsRefused(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	fake := "ba-harmless  " + lead.Public().String()[:20] + "  demo/echo  -  0 calls, 0 units  calls≤1"
	for name, mutate := range map[string]func(*approval.BatchToken){
		"id":           func(b *approval.BatchToken) { b.ID = "x\r\x1b[2K" + fake + "\x1b[8m" },
		"server":       func(b *approval.BatchToken) { b.ServerPattern = "demo\x1b[8m*" },
		"tool":         func(b *approval.BatchToken) { b.ToolPattern = "\r*" },
		"bidi":         func(b *approval.BatchToken) { b.ToolPattern = "\u202eohce" },
		"zero-width":   func(b *approval.BatchToken) { b.ServerPattern = "de\u200bmo" },
		"tab":          func(b *approval.BatchToken) { b.ToolPattern = "echo\t*" },
		"space in id":  func(b *approval.BatchToken) { b.ID = "ba 1" },
		"newline tool": func(b *approval.BatchToken) { b.ToolPattern = "echo\n" },
	} {
		t.Run(name, func(t *testing.T) {
			raw := signBatchToken(t, lead, mutate)
			if _, err := w.k.CreateBatch(context.Background(), raw); !errors.Is(err, approval.ErrMalformedBatch) {
				t.Fatalf("want ErrMalformedBatch, got %v", err)
			}
		})
	}
	if list, _, err := w.k.ListBatches("", 10); err != nil || len(list) != 0 {
		t.Fatalf("a refused batch was stored: %v %v", list, err)
	}
}

// A batch stored before those checks may still hold control characters:
// every field of it the CLI prints, in every output form, is escaped.
func TestBatchListEscapesStoredSignerControlledFields(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	storeLegacyBatch(t, w, signBatchToken(t, lead, func(b *approval.BatchToken) {
		b.ID = "x\r\x1b[2Kba-harmless\x1b[8m"
		b.ServerPattern, b.ToolPattern = "\u202e*", "\x1b[8m*"
		b.MaxTotalAmount = &approval.Amount{Units: 1, Currency: "USD\r"}
	}))
	for _, out := range []string{"table", "json", "jsonl"} {
		so, se, code := w.run(adminEnv(), "approval", "batch", "list", "--output", out)
		if code != 0 {
			t.Fatalf("list --output %s: %d %s", out, code, se)
		}
		if strings.ContainsAny(so, "\r\x1b\u202e") {
			t.Fatalf("batch list --output %s wrote the signer's control characters to the terminal: %q", out, so)
		}
		if !strings.Contains(so, `\u001b`) {
			t.Fatalf("batch list --output %s does not show the escape it hid: %q", out, so)
		}
	}
}

// A batch stored before ids were checked may have an id the revoke path
// cannot carry (too long, "." or "..", control characters): `chio approval
// batch revoke ID` still revokes it.
func TestBatchRevokeReachesStoredIDsThePathCannotCarry(t *testing.T) {
	for _, id := range []string{strings.Repeat("b", 200), "..", ".", "a/b", "x\r\x1b[2K"} {
		w := newApprovalWorld(t)
		lead, err := keys.LoadPrivateKey(w.key("lead"))
		if err != nil {
			t.Fatal(err)
		}
		storeLegacyBatch(t, w, signBatchToken(t, lead, func(b *approval.BatchToken) { b.ID = id }))
		so, se, code := w.run(adminEnv(), "approval", "batch", "revoke", id)
		if code != 0 || strings.ContainsAny(so+se, "\r\x1b") {
			t.Fatalf("revoke %q: %d %q %q", id, code, so, se)
		}
		list, _, err := w.k.ListBatches("", 10)
		if err != nil || len(list) != 1 || !list[0].Revoked {
			t.Fatalf("batch %q is not revoked: %v", id, err)
		}
	}
}

// signBatchToken is lead's unlimited */* standing approval for 29 days,
// edited by mutate before signing.
func signBatchToken(t *testing.T, lead keys.PrivateKey, mutate func(*approval.BatchToken)) []byte {
	t.Helper()
	now := time.Now()
	b := &approval.BatchToken{Schema: approval.BatchSchema, Approver: lead.Public().String(), ID: approval.NewBatchID(),
		ServerPattern: "*", ToolPattern: "*", NotBefore: now.Unix(), NotAfter: now.Add(29 * 24 * time.Hour).Unix()}
	mutate(b)
	raw, err := b.Sign(lead)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// storeLegacyBatch writes a signed batch straight to the store, as a chiod
// that did not yet check batch ids and patterns would have.
func storeLegacyBatch(t *testing.T, w *approvalWorld, raw []byte) {
	t.Helper()
	var tok approval.BatchToken
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutBatch(&approval.Batch{Token: &tok, Raw: raw, CreatedAt: time.Now().UnixMilli()})
	})
	if err != nil {
		t.Fatal(err)
	}
}
