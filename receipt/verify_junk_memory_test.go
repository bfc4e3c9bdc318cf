package receipt

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// junkExport streams an export header followed by units of lines none of
// which the kernel key authenticates: a receipt whose signature fails, a
// receipt line that does not even decode, a checkpoint whose signature
// fails, approval and batch evidence no signed receipt names.
type junkExport struct {
	units, next int
	receipt     []byte // a real receipt with its signature cut off
	cur         []byte
}

func (j *junkExport) Read(p []byte) (int, error) {
	if len(j.cur) == 0 {
		switch {
		case j.next == 0:
			j.cur = fmt.Appendf(nil, `{"exported_at":1,"format":%q,"kernel_key":%q,"receipts":0}`+"\n", ExportFormat, fxKernel.Public())
		case j.next <= j.units:
			i := j.next
			id := fmt.Sprintf("rc-junk-%060d", i)
			rc := bytes.Replace(j.receipt, []byte(`"id":"rc-1"`), []byte(`"id":"`+id+`"`), 1)
			j.cur = fmt.Appendf(nil, "%s\n"+
				`{"action":"junk-%d"}`+"\n"+
				`{"kernel_key":"k","root_hash":"%064d","schema":%q,"signature":"00","timestamp":1,"tree_size":%d}`+"\n"+
				`{"approval_request_id":"ar-junk-%060d","policy_id":"p","trusted_approvers":[],"type":"approval","votes":[]}`+"\n"+
				`{"batch_approval_id":"bt-junk-%060d","token":{},"type":"batch"}`+"\n",
				rc, i, i, CheckpointSchema, i, i, i)
		default:
			return 0, io.EOF
		}
		j.next++
	}
	n := copy(p, j.cur)
	j.cur = j.cur[n:]
	return n, nil
}

// retainedOverJunk verifies units of junk and returns the heap in use once
// every line is folded (afterFold) beyond what was in use before it
// started: what the verifier keeps of the file.
func retainedOverJunk(t *testing.T, units int, unsigned []byte) (uint64, *VerifyReport) {
	runtime.GC()
	var before, folded runtime.MemStats
	runtime.ReadMemStats(&before)
	afterFold = func() {
		runtime.GC()
		runtime.ReadMemStats(&folded)
	}
	defer func() { afterFold = nil }()
	rep, err := VerifyExport(&junkExport{units: units, receipt: unsigned}, VerifyOptions{KernelKey: fxKernel.Public(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if folded.HeapAlloc < before.HeapAlloc {
		return 0, rep
	}
	return folded.HeapAlloc - before.HeapAlloc, rep
}

// The offline verifier kept something of every line it could not
// authenticate until the end of the file: the id of each receipt whose
// signature failed, a Merkle leaf for every receipt line, every checkpoint
// that failed its signature, every approval and batch evidence record no
// signed receipt names. Memory grew with the size of a junk file: a file
// of millions of such lines made the auditor's verifier grow without bound
// before it reported. What it keeps must be bounded by what the kernel key
// authenticated, so four times the junk must not take four times the heap.
func TestVerifyJunkExportRetainsBoundedMemory(t *testing.T) {
	honest := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	unsigned := honest[1][:bytes.Index(honest[1], []byte(`,"signature":`))]
	unsigned = append(bytes.Clone(unsigned), '}')

	const small = 4_000
	small0, rep := retainedOverJunk(t, small, unsigned)
	if rep.OK() || rep.ProblemCount < 5*small {
		t.Fatalf("junk export: ok=%v, %d problems, want at least one per junk line:\n%s", rep.OK(), rep.ProblemCount, problems(rep))
	}
	large0, _ := retainedOverJunk(t, 4*small, unsigned)
	// Allow for what a verification holds whatever the file (the problems
	// listed, maps' buckets): beyond it, the heap must not follow the junk.
	const floor = 4 << 20
	smallHeap, largeHeap := max(small0, floor), max(large0, floor)
	t.Logf("heap held once folded: %d KiB over %d junk units, %d KiB over %d", small0>>10, small, large0>>10, 4*small)
	if float64(largeHeap) > 1.5*float64(smallHeap) {
		t.Fatalf("the verifier held %d KiB after %d units of unauthenticated lines and %d KiB after %d: memory grows with the junk (ratio %.1f)",
			small0>>10, small, large0>>10, 4*small, float64(largeHeap)/float64(smallHeap))
	}
}

// A Problem quotes what the file says (a receipt's id, a line's error),
// and up to MaxProblems are kept: each quote must be cut, or 200 lines of
// 16 MiB ids would hold gigabytes until the report.
func TestVerifyProblemsQuoteABoundedAmount(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	long := "rc-" + strings.Repeat("é", 1<<19) // 1 MiB, two bytes a rune
	ls[3] = bytes.Replace(ls[3], []byte(`"id":"rc-3"`), []byte(`"id":"`+long+`"`), 1)
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, 4, "signature does not verify with the kernel key")
	for _, p := range rep.Problems {
		if len(p.ReceiptID) > 2*maxQuoted || len(p.Message) > 8*maxQuoted {
			t.Fatalf("line %d: a problem quotes %d bytes of id and %d of message from the file", p.Line, len(p.ReceiptID), len(p.Message))
		}
		if !utf8.ValidString(p.ReceiptID) || !utf8.ValidString(p.Message) {
			t.Fatalf("line %d: a cut split a rune", p.Line)
		}
	}
}

// Approval evidence with no votes for a request no receipt names was
// checked vote by vote, so with no vote nothing was said: an export with
// such junk appended passed, OK.
func TestVerifyEvidenceNoReceiptNamesFails(t *testing.T) {
	ev := append(fxEvidence(t), ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-junk", PolicyID: "p",
		TrustedApprovers: []string{}, Votes: []EvidenceVote{}})
	rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev))
	expectProblem(t, rep, 14, "approval ar-junk: no incomplete receipt in the log for this request")
}

// Evidence is checked against the receipts before it, as it is read: a
// receipt after it (the format lists every receipt first) fails.
func TestVerifyReceiptAfterEvidenceFails(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	ls = append(ls, ls[4]) // rc-4, the final of ar-1, again after the evidence
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, len(ls), "receipt after the approval evidence (from line 11)")
}
