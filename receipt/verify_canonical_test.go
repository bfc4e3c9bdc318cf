package receipt

import (
	"bytes"
	"fmt"
	"testing"
)

// An export's receipts are the exact bytes the kernel stored: canonical
// JSON, hashed as they are into the Merkle log. A re-encoding of a signed
// receipt (insignificant whitespace, an escaped character, another spelling
// of a number) still carries a valid signature, because signatures are over
// the canonical form, but it is not the kernel's leaf, and its fields can be
// read two ways (metadata 1.5e3 where the kernel signed 1500). Covered by a
// checkpoint, the root catches it; after the latest checkpoint nothing did,
// and verify said OK.
func TestVerifyRefusesNonCanonicalReceiptBytes(t *testing.T) {
	base := fxReceipts()
	extra := *base[0]
	extra.ID, extra.Seq, extra.RequestID = "rc-8", 8, "req-8"
	extra.Metadata = map[string]any{"amount_cents": 1500}
	raw8, err := Sign(fxKernel, &extra)
	if err != nil {
		t.Fatal(err)
	}
	// The export of receipts 1..7 (checkpoints at 4 and 7), then rc-8 after
	// the latest checkpoint, as an honest export taken between checkpoints.
	ls := lines(fxExport(t, base, fxKernel, nil))
	header := []byte(bytes.Replace(ls[0], []byte(`"receipts":7`), []byte(`"receipts":8`), 1))
	with := func(rc8 []byte) []byte {
		out := [][]byte{header}
		out = append(out, ls[1:8]...)
		out = append(out, rc8)
		return join(append(out, ls[8:]...))
	}
	if rep := verifyBytes(t, with(raw8)); !rep.OK() {
		t.Fatalf("honest export with an uncovered receipt fails:\n%s", problems(rep))
	}
	for name, alt := range map[string][]byte{
		"whitespace":   bytes.Replace(raw8, []byte(`,"id":`), []byte(`, "id":`), 1),
		"number form":  bytes.Replace(raw8, []byte(`"amount_cents":1500`), []byte(`"amount_cents":1.5e3`), 1),
		"escaped char": bytes.Replace(raw8, []byte(`"req-8"`), []byte(`"req\u002d8"`), 1),
		"member order": reorderFirstMembers(t, raw8),
	} {
		t.Run(name, func(t *testing.T) {
			if bytes.Equal(alt, raw8) {
				t.Fatal("test did not alter the receipt")
			}
			if _, err := Verify(alt, fxKernel.Public()); err != nil {
				t.Fatalf("the re-encoding should still carry a valid signature: %v", err)
			}
			rep := verifyBytes(t, with(alt))
			if rep.OK() {
				t.Fatalf("a re-encoded receipt (not the kernel's stored bytes) verifies OK")
			}
			expectProblem(t, rep, 9, "not in canonical form")
		})
	}
}

// reorderFirstMembers swaps the receipt's first two members.
func reorderFirstMembers(t *testing.T, raw []byte) []byte {
	t.Helper()
	cut := bytes.Index(raw, []byte(`,"capability_id":`))
	next := bytes.Index(raw, []byte(`,"decision":`))
	if cut < 0 || next < cut {
		t.Fatal("unexpected receipt layout")
	}
	action, capability := raw[1:cut], raw[cut+1:next]
	return []byte(fmt.Sprintf("{%s,%s%s", capability, action, raw[next:]))
}
