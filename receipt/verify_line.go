package receipt

import (
	"bytes"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// The per-line checks of VerifyExport (verify_log.go), run in parallel:
// each line's signature, shape and embedded tokens, on its own.

type kind int

const (
	kindBad kind = iota
	kindHeader
	kindReceipt
	kindCheckpoint
	kindApproval
	kindBatch
)

// item is one line, checked in parallel, then folded in order.
type item struct {
	line int
	raw  []byte
	kind kind
	err  error // the line's own check failed

	rc     *Receipt // parsed (verified unless err)
	leaf   [32]byte
	call   callKey // of a verified allow or incomplete receipt (verify_delivery.go)
	cp     *Checkpoint
	header *ExportHeader
	ev     *evidenceItem
}

// tokenView is what the auditor reads from approval and batch tokens.
type tokenView struct {
	Schema             string `json:"schema"`
	ID                 string `json:"id"`
	Approver           string `json:"approver"`
	Subject            string `json:"subject"`
	GovernedIntentHash string `json:"governed_intent_hash"`
	RequestID          string `json:"request_id"`
	Decision           string `json:"decision"`
	IssuedAt           int64  `json:"issued_at"`  // unix s
	ExpiresAt          int64  `json:"expires_at"` // unix s
	// A batch token's scope (approval.BatchToken). Audience is the kernel
	// it was signed for ("" in batches stored before it was required).
	Audience      string `json:"audience"`
	ServerPattern string `json:"server_pattern"`
	ToolPattern   string `json:"tool_pattern"`
	NotBefore     int64  `json:"not_before"` // unix s
	NotAfter      int64  `json:"not_after"`  // unix s
	// MaxCalls is how many calls the batch may approve (nil: no limit).
	MaxCalls *int64 `json:"max_calls"`
	// AmendedArguments is set when the approver changed the call's
	// arguments (only its presence is read: see sameCall).
	AmendedArguments jsontext.Value `json:"amended_arguments"`
	// Answers are an approval's answers to a question, canonicalized by
	// checkToken, so equal answers are equal bytes.
	Answers jsontext.Value `json:"answers"`
}

type checkedToken struct {
	tok  tokenView
	vote string // approver the evidence lists
	err  error  // malformed or signature
}

type evidenceItem struct {
	line    int
	id      string
	trusted map[string]bool // the export's word, not signed
	tokens  []checkedToken
	used    bool

	// What the request's final receipt signs about its votes (vouch, in
	// verify_votes.go); final.rc is nil until a deciding token is found.
	final       final
	decision    string          // the deciding token's
	answers     jsontext.Value  // the deciding token's (verify_answers.go)
	uncounted   map[string]bool // keys the final receipt names in uncounted
	complete    bool            // the receipt names every vote, not only the deciding side
	signed      map[string]signedVote
	signedOrder []string
}

// IsReceiptLine reports whether an export line is a receipt's: stored
// receipts are canonical, members sorted, so each begins with its first,
// "action" (checkpoints and evidence begin otherwise). The verifier reads
// lines by it, and `chio receipt export` counts an answer's receipts by it.
func IsReceiptLine(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"action":`)) }

// checkLine classifies a line and checks what needs no context: signatures.
func checkLine(it *item, key keys.PublicKey) {
	// Stored receipts are canonical, so they begin with their first member
	// in sorted order; that skips one decoding pass for nearly every line.
	// Anything else that starts this way and is not a valid receipt is
	// reported as a malformed receipt, which it is.
	if IsReceiptLine(it.raw) {
		checkReceipt(it, key)
		return
	}
	var env struct {
		Schema string `json:"schema"`
		Type   string `json:"type"`
		Format string `json:"format"`
	}
	if err := jsonv2.Unmarshal(it.raw, &env); err != nil {
		it.err = fmt.Errorf("not a JSON object: %v", err)
		return
	}
	switch {
	case env.Format != "":
		it.kind = kindHeader
		var h ExportHeader
		if err := canon.Unmarshal(it.raw, &h); err != nil {
			it.err = fmt.Errorf("malformed export header: %v", err)
			return
		}
		it.header = &h
	case env.Schema == Schema:
		checkReceipt(it, key)
	case env.Schema == CheckpointSchema:
		it.kind = kindCheckpoint
		it.cp, it.err = VerifyCheckpoint(it.raw, key)
		if it.err != nil {
			var c Checkpoint
			if jsonv2.Unmarshal(it.raw, &c) == nil {
				it.cp = &c
			}
		}
	case env.Type == EvidenceApproval:
		it.kind = kindApproval
		var ev ApprovalEvidence
		if err := canon.Unmarshal(it.raw, &ev); err != nil {
			it.err = fmt.Errorf("malformed approval evidence: %v", err)
			return
		}
		it.ev = &evidenceItem{line: it.line, id: ev.ApprovalRequestID, trusted: map[string]bool{}}
		for _, k := range ev.TrustedApprovers {
			it.ev.trusted[k] = true
		}
		for _, vote := range ev.Votes {
			it.ev.tokens = append(it.ev.tokens, checkToken(vote.Token, approvalTokenSchema, vote.Approver))
		}
	case env.Type == EvidenceBatch:
		it.kind = kindBatch
		var ev BatchEvidence
		if err := canon.Unmarshal(it.raw, &ev); err != nil {
			it.err = fmt.Errorf("malformed batch evidence: %v", err)
			return
		}
		it.ev = &evidenceItem{line: it.line, id: ev.BatchApprovalID,
			tokens: []checkedToken{checkToken(ev.Token, batchTokenSchema, "")}}
	default:
		it.err = errors.New("unknown record (neither receipt, checkpoint, evidence nor header)")
	}
}

func checkReceipt(it *item, key keys.PublicKey) {
	it.kind = kindReceipt
	it.leaf = LeafHash(it.raw)
	it.rc, it.err = VerifyCanonical(it.raw, key)
	if it.err != nil {
		it.rc, _ = Decode(it.raw) // for seq and id in the report, if it decodes at all
		return
	}
	if v := it.rc.Decision.Verdict; v == Allow || v == Incomplete {
		it.call = callKeyOf(it.rc) // here, in parallel, not in the ordered fold
	}
}

// ErrNotCanonical marks a receipt whose signature verifies but whose bytes
// are not the canonical form the kernel signed, stored and logged.
var ErrNotCanonical = errors.New("not in canonical form (RFC 8785)")

// VerifyCanonical is VerifyStored for receipt bytes that must also be byte
// for byte the canonical form the kernel stored: a receipt line of an
// export, or one chiod serves (chio receipt list and show print them as
// they are). The signature alone does not say so: it is over the canonical
// form, so any re-encoding (whitespace, member order, escapes, 1.5e3 for
// 1500) verifies too, yet it is not the kernel's Merkle leaf, and its
// values can read differently (a metadata number's literal). Covered by a
// checkpoint, the root would catch it; after the latest checkpoint (and
// for a receipt listed or shown, whose inclusion is not checked) only
// this does.
func VerifyCanonical(raw []byte, key keys.PublicKey) (*Receipt, error) {
	if r := verifyCanonical(raw, key); r != nil {
		return r, nil // the fast path accepts only canonical bytes
	}
	r, err := Verify(raw, key)
	if err != nil {
		return nil, err
	}
	c := jsontext.Value(bytes.Clone(raw))
	if err := c.Canonicalize(); err != nil || !bytes.Equal(c, raw) {
		return nil, fmt.Errorf("%w: receipt %s is %w: its signature verifies, but these are not the bytes the kernel stored and logged", ErrInvalid, r.ID, ErrNotCanonical)
	}
	return r, nil
}

// checkToken parses a token strictly and checks its signature by the key
// it names as approver; whether that approver is trusted is checked later.
func checkToken(raw []byte, schema, listed string) checkedToken {
	var ct checkedToken
	ct.vote = listed
	if err := canon.Check(raw); err != nil {
		ct.err = fmt.Errorf("malformed token: %v", err)
		return ct
	}
	if err := jsonv2.Unmarshal(raw, &ct.tok); err != nil || ct.tok.Schema != schema || ct.tok.ID == "" {
		ct.err = fmt.Errorf("malformed token (want schema %s)", schema)
		return ct
	}
	// The kernel stores a token as the approver presented it, and compares
	// answers canonically (approval.SameAnswers, with internal/canon): so
	// does accounted, by these bytes, canonicalized by the same code. The
	// signature below is over the canonical form anyway.
	if len(ct.tok.Answers) > 0 {
		a, err := canon.Canonicalize(ct.tok.Answers)
		if err != nil {
			ct.err = fmt.Errorf("malformed token %s: answers: %v", ct.tok.ID, err)
			return ct
		}
		ct.tok.Answers = a
	}
	if listed != "" && listed != ct.tok.Approver {
		ct.err = fmt.Errorf("evidence lists approver %s but token %s names %s", listed, ct.tok.ID, ct.tok.Approver)
		return ct
	}
	pub, err := approverKey(ct.tok.Approver)
	if err != nil {
		ct.err = fmt.Errorf("token %s: approver key: %v", ct.tok.ID, err)
		return ct
	}
	if err := signed.Verify(raw, schema, pub); err != nil {
		ct.err = fmt.Errorf("token %s: signature by approver %s does not verify (%v)", ct.tok.ID, ct.tok.Approver, err)
	}
	return ct
}

// chainLink is an incomplete receipt and what followed it.
