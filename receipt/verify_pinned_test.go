package receipt

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// cutTail returns an honest export of 10 receipts (checkpoints at 4 and
// 10) and the same export with receipts 5..10 and the checkpoint of size 10
// removed and the header's unsigned count edited to 4.
func cutTail(t *testing.T) (full, cut [][]byte) {
	t.Helper()
	var rs []*Receipt
	for i := 1; i <= 10; i++ {
		rs = append(rs, &Receipt{ID: fmt.Sprintf("rc-%d", i), Seq: uint64(i), Timestamp: 1_700_000_000_000 + int64(i),
			RequestID: fmt.Sprint("req-", i), Decision: Decision{Verdict: Allow}})
	}
	full = lines(fxExport(t, rs, fxKernel, []any{})) // header, 10 receipts, cp4, cp10
	if !bytes.Contains(full[11], []byte(`"tree_size":4`)) || !bytes.Contains(full[12], []byte(`"tree_size":10`)) {
		t.Fatalf("fixture layout changed: %s", full[11])
	}
	cut = [][]byte{bytes.Replace(full[0], []byte(`"receipts":10`), []byte(`"receipts":4`), 1)}
	cut = append(cut, full[1:5]...) // seq 1..4
	cut = append(cut, full[11])     // checkpoint tree_size 4
	return full, cut
}

func verifyPinnedBytes(t *testing.T, b []byte, pins ...[]byte) *VerifyReport {
	t.Helper()
	rep, err := VerifyExport(bytes.NewReader(b), VerifyOptions{KernelKey: fxKernel.Public(), Workers: 2, Pinned: pins})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A tail cut after the export's last remaining checkpoint leaves a file
// identical to an older honest export: the file alone cannot tell (the
// report says how far it is proven), a checkpoint obtained independently
// can.
func TestVerifyExportCutTailFailsAgainstAPinnedCheckpoint(t *testing.T) {
	full, cut := cutTail(t)
	if rep := verifyPinnedBytes(t, join(full), full[12]); !rep.OK() || len(rep.Pinned) != 1 || rep.Pinned[0].TreeSize != 10 {
		t.Fatalf("honest export against its own latest checkpoint: %+v\n%s", rep, problems(rep))
	}
	// Alone, the cut file is an export of a log of 4: proven that far only.
	if rep := verifyBytes(t, join(cut)); !rep.OK() || rep.Latest.TreeSize != 4 || rep.Pinned != nil {
		t.Fatalf("cut export alone: %+v\n%s", rep, problems(rep))
	}
	rep := verifyPinnedBytes(t, join(cut), full[12])
	if rep.OK() {
		t.Fatalf("export with the last 6 receipts cut verified OK against a checkpoint of size 10")
	}
	expectProblem(t, rep, 0, "the export holds 4 receipts, but the independently obtained checkpoint tree_size 10")
	expectProblem(t, rep, 0, "receipts 5..10 are missing")
	// A pin the cut export does reach is fine; the larger failing one is
	// still a failure.
	if rep := verifyPinnedBytes(t, join(cut), full[11]); !rep.OK() || len(rep.Pinned) != 1 || rep.Pinned[0].TreeSize != 4 {
		t.Fatalf("cut export against the size-4 checkpoint: %+v\n%s", rep, problems(rep))
	}
	if rep := verifyPinnedBytes(t, join(cut), full[11], full[12]); rep.OK() || len(rep.Pinned) != 1 || rep.Pinned[0].TreeSize != 4 {
		t.Fatalf("two pins, one not reached: %+v", rep)
	}
}

// A pinned checkpoint of another history (same size, other root) is a
// failure: the export's receipts are not the log the checkpoint signed.
func TestVerifyExportInconsistentWithAPinnedCheckpoint(t *testing.T) {
	full, _ := cutTail(t)
	other, _, err := SignCheckpoint(fxKernel, 7, LeafHash([]byte("another log")), time.UnixMilli(1_700_000_200_000))
	if err != nil {
		t.Fatal(err)
	}
	rep := verifyPinnedBytes(t, join(full), other)
	expectProblem(t, rep, 0, "the export is not consistent with the independently obtained checkpoint tree_size 7")
	if rep.Pinned != nil {
		t.Fatalf("an inconsistent pin was reported as reached: %+v", rep.Pinned)
	}
}

// A pin not signed by the trusted key is refused before anything is read.
func TestVerifyExportRefusesAPinSignedByAnotherKey(t *testing.T) {
	full, _ := cutTail(t)
	forged, _, err := SignCheckpoint(fxOther, 10, [32]byte{}, time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range [][]byte{forged, []byte(`{"schema":"chio.checkpoint.v1"}`)} {
		if _, err := VerifyExport(bytes.NewReader(join(full)), VerifyOptions{KernelKey: fxKernel.Public(), Pinned: [][]byte{pin}}); err == nil {
			t.Fatalf("pinned %s accepted", pin)
		}
	}
}

// An export with no valid checkpoint proves nothing, even with no receipt:
// a header alone is not "OK". An honest export of an empty log carries the
// checkpoint of size 0 and passes.
func TestVerifyExportWithoutACheckpointFails(t *testing.T) {
	var buf bytes.Buffer
	x := NewExportWriter(&buf, ExportHeader{KernelKey: fxKernel.Public().String(), ExportedAt: 1, Receipts: 0})
	x.Flush()
	rep := verifyBytes(t, buf.Bytes())
	if rep.OK() {
		t.Fatalf("an export with no receipt and no signed checkpoint verified OK: %+v", rep)
	}
	expectProblem(t, rep, 0, "no valid signed checkpoint in the export")

	cp, _, err := SignCheckpoint(fxKernel, 0, emptyRoot, time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	x.Signed(cp)
	x.Flush()
	if rep := verifyBytes(t, buf.Bytes()); !rep.OK() || rep.Latest == nil || rep.Latest.TreeSize != 0 {
		t.Fatalf("honest empty export: %+v\n%s", rep, problems(rep))
	}
	// Receipts without their checkpoints fail too (as before).
	full, _ := cutTail(t)
	if rep := verifyBytes(t, join(full[:11])); rep.OK() {
		t.Fatal("receipts without any checkpoint verified OK")
	}
}
