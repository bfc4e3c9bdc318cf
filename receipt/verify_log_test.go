package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// An audit fixture: receipts with two approval chains (one approved, one
// denied by a human) and a batch-approved call, two checkpoints, evidence.

var (
	fxKernel   = keys.FromSeed(bytes.Repeat([]byte{7}, 32))
	fxApprover = keys.FromSeed(bytes.Repeat([]byte{8}, 32))
	fxOther    = keys.FromSeed(bytes.Repeat([]byte{9}, 32))
	fxAgent    = "ed25519:" + strings.Repeat("ab", 32)
)

func fxHash(s string) string { return HashHex(LeafHash([]byte(s))) }

// fxReceipts are the receipts in seq order; tests mutate them before export.
func fxReceipts() []*Receipt {
	mk := func(seq uint64, req string, d Decision, meta map[string]any) *Receipt {
		return &Receipt{ID: fmt.Sprintf("rc-%d", seq), Seq: seq, Timestamp: 1_700_000_000_000 + int64(seq)*1000, RequestID: req,
			CapabilityID: "cap-1", Subject: fxAgent, ToolServer: "payments", ToolName: "issue_refund", Action: "charge",
			ParameterHash: fxHash(req), Decision: d, Metadata: meta, PolicyHash: fxHash("policy")}
	}
	approver := fxApprover.Public().String()
	return []*Receipt{
		mk(1, "req-1", Decision{Verdict: Allow}, nil),
		mk(2, "req-2", Decision{Verdict: Incomplete, Reason: "awaiting human approval"}, map[string]any{"approval_request_id": "ar-1", "summary": "refund 450", "deadline": 1_700_003_600}),
		mk(3, "req-3", Decision{Verdict: Deny, Guard: "forbidden_paths", Reason: "path"}, nil),
		mk(4, "req-2", Decision{Verdict: Allow}, map[string]any{"approval_request_id": "ar-1", "previous_receipt_id": "rc-2",
			"approval_token_id": "at-1", "approver": approver, "approver_display_name": "Finance Lead", "approval_latency_ms": 1500, "channel": "api"}),
		mk(5, "req-5", Decision{Verdict: Incomplete, Reason: "awaiting human approval"}, map[string]any{"approval_request_id": "ar-2", "summary": "refund 900", "deadline": 1_700_003_600}),
		mk(6, "req-5", Decision{Verdict: Deny, Guard: "human-approval", Reason: "too much"}, map[string]any{"approval_request_id": "ar-2", "previous_receipt_id": "rc-5",
			"approval_token_id": "at-2", "approver": approver, "approver_display_name": "Finance Lead", "approval_latency_ms": 800, "channel": "api"}),
		mk(7, "req-7", Decision{Verdict: Allow}, map[string]any{"batch_approval_id": "bt-1", "approver": approver, "channel": "batch"}),
	}
}

type fxToken struct {
	Schema             string `json:"schema"`
	ID                 string `json:"id"`
	Approver           string `json:"approver"`
	Subject            string `json:"subject"`
	GovernedIntentHash string `json:"governed_intent_hash"`
	RequestID          string `json:"request_id"`
	IssuedAt           int64  `json:"issued_at"`
	ExpiresAt          int64  `json:"expires_at"`
	Decision           string `json:"decision"`
}

func fxSignToken(t testing.TB, by keys.PrivateKey, tok fxToken) json.RawMessage {
	t.Helper()
	tok.Schema, tok.Approver = approvalTokenSchema, by.Public().String()
	tok.IssuedAt, tok.ExpiresAt = 1_700_000_000, 1_700_003_600
	raw, err := signed.Sign(by, approvalTokenSchema, tok)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// fxExport signs rs with key, checkpoints at 4 and len(rs), and writes
// the export with the given evidence (nil = the fixture's honest evidence).
func fxExport(t testing.TB, rs []*Receipt, key keys.PrivateKey, evidence []any) []byte {
	t.Helper()
	var buf bytes.Buffer
	x := NewExportWriter(&buf, ExportHeader{KernelKey: fxKernel.Public().String(), ExportedAt: 1, Receipts: uint64(len(rs))})
	var leaves [][32]byte
	for _, r := range rs {
		raw, err := Sign(key, r)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, LeafHash(raw))
		x.Signed(raw)
	}
	tree := NewTreeFromLeaves(leaves)
	for _, size := range []uint64{4, uint64(len(rs))} {
		root, _ := tree.Root(size)
		raw, _, err := SignCheckpoint(fxKernel, size, root, time.UnixMilli(1_700_000_100_000))
		if err != nil {
			t.Fatal(err)
		}
		x.Signed(raw)
	}
	if evidence == nil {
		evidence = fxEvidence(t)
	}
	for _, ev := range evidence {
		x.Record(ev)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fxEvidence(t testing.TB) []any {
	approver := fxApprover.Public().String()
	batch, err := signed.Sign(fxApprover, batchTokenSchema, map[string]any{"schema": batchTokenSchema, "id": "bt-1",
		"approver": approver, "server_pattern": "payments", "tool_pattern": "*", "not_before": 1_700_000_000, "not_after": 1_700_003_600}) // covers rc-7
	if err != nil {
		t.Fatal(err)
	}
	return []any{
		ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds", TrustedApprovers: []string{approver},
			Votes: []EvidenceVote{{Approver: approver, Token: fxSignToken(t, fxApprover, fxToken{ID: "at-1", Subject: fxAgent, GovernedIntentHash: fxHash("req-2"), RequestID: "ar-1", Decision: "approved"})}}},
		ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-2", PolicyID: "refunds", TrustedApprovers: []string{approver},
			Votes: []EvidenceVote{{Approver: approver, Token: fxSignToken(t, fxApprover, fxToken{ID: "at-2", Subject: fxAgent, GovernedIntentHash: fxHash("req-5"), RequestID: "ar-2", Decision: "denied"})}}},
		BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch},
	}
}

func verifyBytes(t *testing.T, b []byte) *VerifyReport {
	t.Helper()
	rep, err := VerifyExport(bytes.NewReader(b), VerifyOptions{KernelKey: fxKernel.Public(), Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// expectProblem fails unless a problem on line (0 = any) contains want.
func expectProblem(t *testing.T, rep *VerifyReport, line int, want string) {
	t.Helper()
	for _, p := range rep.Problems {
		if (line == 0 || p.Line == line) && strings.Contains(p.String(), want) {
			return
		}
	}
	t.Fatalf("no problem %q at line %d; got:\n%s", want, line, problems(rep))
}

func problems(rep *VerifyReport) string {
	var sb strings.Builder
	for _, p := range rep.Problems {
		sb.WriteString("  " + p.String() + "\n")
	}
	return sb.String()
}

func lines(b []byte) [][]byte { return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) }
func join(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }

func TestVerifyExportHonest(t *testing.T) {
	rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, nil))
	if !rep.OK() {
		t.Fatalf("honest export failed:\n%s", problems(rep))
	}
	if rep.Receipts != 7 || rep.LastSeq != 7 || rep.Checkpoints != 2 || rep.Latest.TreeSize != 7 || rep.Uncovered != 0 ||
		rep.Chains != 2 || rep.Pending != 0 || rep.Tokens != 2 || rep.BatchTokens != 1 {
		t.Fatalf("report %+v", rep)
	}
}

func TestVerifyFlippedByte(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	// Line 4 is seq 3. Flip one hex digit of its parameter_hash: still
	// valid JSON, so only the signature (and the Merkle root) can tell.
	i := bytes.Index(ls[3], []byte(`"parameter_hash":"`)) + len(`"parameter_hash":"`)
	ls[3][i] ^= 1
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, 4, "receipt rc-3 (seq 3): signature does not verify with the kernel key")
	expectProblem(t, rep, 0, "does not match the root recomputed from the receipts")
}

func TestVerifyDeletedReceipt(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	ls = append(ls[:3], ls[4:]...) // drop seq 3
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, 4, "receipt rc-4 (seq 4): seq gap: expected seq 3, found 4 (receipts 3..3 are missing)")
	expectProblem(t, rep, 1, "header announces 7 receipts, the file holds 6")
}

func TestVerifyReorderedReceipts(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	ls[3], ls[4] = ls[4], ls[3] // seq 4 before seq 3
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, 5, "receipt rc-3 (seq 3): out of order: seq 3 after seq 4")
	expectProblem(t, rep, 0, "does not match the root recomputed")
}

func TestVerifyReceiptSignedByAnotherKey(t *testing.T) {
	honest := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	forged := lines(fxExport(t, fxReceipts(), fxOther, nil))
	honest[3] = forged[3] // seq 3, validly signed, by the wrong key
	rep := verifyBytes(t, join(honest))
	expectProblem(t, rep, 4, "receipt rc-3 (seq 3): signature does not verify with the kernel key")
	expectProblem(t, rep, 4, "names kernel key "+fxOther.Public().String())
}

func TestVerifyForgedCheckpoint(t *testing.T) {
	rs := fxReceipts()
	ls := lines(fxExport(t, rs, fxKernel, nil))
	var leaves [][32]byte
	for _, l := range ls[1:8] {
		leaves = append(leaves, LeafHash(l))
	}
	root, _ := NewTreeFromLeaves(leaves).Root(7)
	// Right root, wrong signer (line 10 is the size-7 checkpoint).
	byOther, _, _ := SignCheckpoint(fxOther, 7, root, time.Now())
	ls[9] = byOther
	rep := verifyBytes(t, join(ls))
	expectProblem(t, rep, 10, "checkpoint tree_size 7: signature does not verify")

	// Right signer, wrong root: the kernel's own checkpoint over other data.
	ls = lines(fxExport(t, rs, fxKernel, nil))
	lie, _, _ := SignCheckpoint(fxKernel, 7, LeafHash([]byte("not the log")), time.Now())
	ls[9] = lie
	rep = verifyBytes(t, join(ls))
	expectProblem(t, rep, 10, "checkpoint tree_size 7: root_hash")
	expectProblem(t, rep, 10, "does not match the root recomputed from the receipts")
	// A checkpoint that fails is not counted as valid (the size-4 one is).
	if rep.Checkpoints != 1 || rep.CheckpointFailures != 1 || rep.Latest.TreeSize != 4 {
		t.Fatalf("counted %d valid, %d failed, latest %+v", rep.Checkpoints, rep.CheckpointFailures, rep.Latest)
	}

	// A checkpoint that claims more receipts than the log holds.
	big, _, _ := SignCheckpoint(fxKernel, 8, root, time.Now())
	ls[9] = big
	rep = verifyBytes(t, join(ls))
	expectProblem(t, rep, 10, "checkpoint tree_size 8 covers more receipts than the export holds (7)")
}

func TestVerifyBrokenApprovalChain(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]*Receipt)
		line   int
		want   string
	}{
		{"previous points nowhere", func(rs []*Receipt) { rs[3].Metadata["previous_receipt_id"] = "rc-nowhere" }, 5,
			"receipt rc-4 (seq 4): broken approval chain: previous_receipt_id rc-nowhere is not an earlier incomplete receipt in the log"},
		{"previous is not incomplete", func(rs []*Receipt) { rs[3].Metadata["previous_receipt_id"] = "rc-1" }, 5,
			"broken approval chain: previous_receipt_id rc-1 is not an earlier incomplete receipt"},
		{"other request", func(rs []*Receipt) { rs[3].RequestID = "req-9" }, 5,
			"broken approval chain: request_id req-9 differs from req-2 on incomplete receipt rc-2"},
		{"other approval request", func(rs []*Receipt) { rs[3].Metadata["approval_request_id"] = "ar-2" }, 5,
			`broken approval chain: approval_request_id "ar-2" differs from ar-1 on incomplete receipt rc-2`},
		{"no link", func(rs []*Receipt) { delete(rs[3].Metadata, "previous_receipt_id") }, 5,
			"approval_request_id ar-1 but no previous_receipt_id"},
		{"two finals", func(rs []*Receipt) {
			rs[6] = &Receipt{ID: "rc-7", Seq: 7, Timestamp: rs[3].Timestamp + 1, RequestID: "req-2", Subject: fxAgent,
				ParameterHash: rs[3].ParameterHash, Decision: Decision{Verdict: Allow},
				Metadata: map[string]any{"approval_request_id": "ar-1", "previous_receipt_id": "rc-2"}}
		}, 8, "incomplete receipt rc-2 already has a final receipt rc-4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := fxReceipts()
			c.mutate(rs)
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil))
			expectProblem(t, rep, c.line, c.want)
		})
	}
}

func TestVerifyTamperedApprovalToken(t *testing.T) {
	approver := fxApprover.Public().String()
	honestTok := func(id, ar, hashOf, decision string, by keys.PrivateKey) json.RawMessage {
		return fxSignToken(t, by, fxToken{ID: id, Subject: fxAgent, GovernedIntentHash: fxHash(hashOf), RequestID: ar, Decision: decision})
	}
	ev := func(trusted string, tok json.RawMessage) []any {
		rest := fxEvidence(t)[1:]
		var probe struct {
			Approver string `json:"approver"`
		}
		json.Unmarshal(tok, &probe)
		return append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds",
			TrustedApprovers: []string{trusted}, Votes: []EvidenceVote{{Approver: probe.Approver, Token: tok}}}}, rest...)
	}
	// Line 11 holds ar-1's evidence: header, 7 receipts, 2 checkpoints.
	good := honestTok("at-1", "ar-1", "req-2", "approved", fxApprover)
	cases := []struct {
		name string
		ev   []any
		want string
	}{
		{"decision rewritten", ev(approver, bytes.Replace(good, []byte(`"approved"`), []byte(`"denied"`), 1)),
			"approval ar-1: token at-1: signature by approver " + approver + " does not verify"},
		{"signature bytes flipped", ev(approver, flipSig(good)), "token at-1: signature by approver"},
		{"token for another request", ev(approver, honestTok("at-1", "ar-9", "req-2", "approved", fxApprover)),
			"approval ar-1: token at-1 is for approval request ar-9"},
		{"token for other call content", ev(approver, honestTok("at-1", "ar-1", "req-other", "approved", fxApprover)),
			"approval ar-1: token at-1 binds governed_intent_hash " + fxHash("req-other") + ", but incomplete receipt rc-2 has parameter_hash " + fxHash("req-2")},
		// The signed receipt, not the export's trusted list, vouches for the
		// deciding approver: a token by another key is caught against it.
		{"untrusted approver", ev(approver, honestTok("at-1", "ar-1", "req-2", "approved", fxOther)),
			"receipt names approver " + fxApprover.Public().String() + " but token at-1 is signed by " + fxOther.Public().String()},
		{"token says denied", ev(approver, honestTok("at-1", "ar-1", "req-2", "denied", fxApprover)),
			`receipt is allow but the deciding token at-1 says "denied"`},
		{"missing evidence", fxEvidence(t)[1:], "receipt rc-4 (seq 4): no approval evidence for approval_request_id ar-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, c.ev))
			expectProblem(t, rep, 0, c.want)
		})
	}
}

func flipSig(tok json.RawMessage) json.RawMessage {
	out := bytes.Clone(tok)
	i := bytes.Index(out, []byte(`"signature":"`)) + len(`"signature":"`)
	if out[i] == '0' {
		out[i] = '1'
	} else {
		out[i] = '0'
	}
	return out
}

func TestVerifyHeaderAndFraming(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	rep, err := VerifyExport(bytes.NewReader(join(ls)), VerifyOptions{KernelKey: fxOther.Public()})
	if err != nil {
		t.Fatal(err)
	}
	expectProblem(t, rep, 1, "export names kernel key "+fxKernel.Public().String()+", verifying against the trusted key "+fxOther.Public().String())
	expectProblem(t, rep, 2, "signature does not verify")

	rep = verifyBytes(t, join(ls[1:]))
	expectProblem(t, rep, 1, "missing export header")

	rep = verifyBytes(t, join(append(ls, []byte(`{"hello":1}`))))
	expectProblem(t, rep, len(ls)+1, "unknown record")

	rep = verifyBytes(t, join(append(ls[:1:1], ls[1:8]...))) // no checkpoints
	expectProblem(t, rep, 0, "no valid signed checkpoint")

	if _, err := VerifyExport(bytes.NewReader(nil), VerifyOptions{}); err == nil {
		t.Fatal("no kernel key accepted")
	}
}

// The parallel chunking must not change results: a long log, many chunks.
func TestVerifyExportManyChunks(t *testing.T) {
	defer func(n int) { chunkLines = n }(chunkLines)
	chunkLines = 64
	var rs []*Receipt
	for i := 1; i <= 3*chunkLines+17; i++ {
		rs = append(rs, &Receipt{ID: fmt.Sprintf("rc-%d", i), Seq: uint64(i), Timestamp: int64(i), RequestID: fmt.Sprint(i),
			Decision: Decision{Verdict: Allow}})
	}
	b := fxExport(t, rs, fxKernel, []any{})
	rep := verifyBytes(t, b)
	if !rep.OK() || rep.Receipts != uint64(len(rs)) {
		t.Fatalf("%d receipts:\n%s", rep.Receipts, problems(rep))
	}
	ls := lines(b)
	ls = append(ls[:chunkLines+3], ls[chunkLines+4:]...)
	rep = verifyBytes(t, join(ls))
	expectProblem(t, rep, chunkLines+4, fmt.Sprintf("seq gap: expected seq %d", chunkLines+3))
}
