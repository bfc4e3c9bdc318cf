package receipt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ExportFormat names the audit export: JSON Lines, one record a line.
//
//	line 1     {"format":"chio.export.v1","kernel_key":…,"exported_at":…,"receipts":N}
//	then       every receipt, seq 1..N, as its stored signed bytes
//	then       every checkpoint (tree_size ≤ N) as its stored signed bytes
//	then       approval evidence for each human- or kernel-decided call:
//	           {"type":"approval","approval_request_id","policy_id",
//	            "trusted_approvers":[…],"votes":[{"approver","token":{…signed token…}}]}
//	and        {"type":"batch","batch_approval_id","token":{…signed batch token…}}
//	           for each batch approval a receipt names.
//
// Receipts and checkpoints are the exact bytes the kernel signed, so the file
// verifies offline with nothing but the kernel's public key (VerifyExport).
// trusted_approvers and the list of votes are the kernel's record of the
// request, not signed statements: VerifyExport accounts for each vote by
// the signed final receipt (verify_votes.go); check the keys against the
// policy whose hash the receipts carry.
const ExportFormat = "chio.export.v1"

// Evidence record types.
const (
	EvidenceApproval = "approval"
	EvidenceBatch    = "batch"
)

// ExportHeader is the first line of an export.
type ExportHeader struct {
	Format     string `json:"format"`
	KernelKey  string `json:"kernel_key"`
	ExportedAt int64  `json:"exported_at"` // unix ms
	Receipts   uint64 `json:"receipts"`    // receipt lines that follow: seq 1..Receipts
}

// ApprovalEvidence is the approvers' side of one approval request.
type ApprovalEvidence struct {
	Type              string         `json:"type"`
	ApprovalRequestID string         `json:"approval_request_id"`
	PolicyID          string         `json:"policy_id"`
	TrustedApprovers  []string       `json:"trusted_approvers"`
	Votes             []EvidenceVote `json:"votes"`
}

// EvidenceVote is one counted decision: the approver's signed token exactly
// as the kernel received it.
type EvidenceVote struct {
	Approver string          `json:"approver"`
	Token    json.RawMessage `json:"token"`
}

// BatchEvidence is a standing (batch) approval's signed token.
type BatchEvidence struct {
	Type            string          `json:"type"`
	BatchApprovalID string          `json:"batch_approval_id"`
	Token           json.RawMessage `json:"token"`
}

// ExportWriter writes an export's lines. Its first error sticks and is
// returned by every later call.
type ExportWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
	err error
}

// NewExportWriter writes the header line.
func NewExportWriter(w io.Writer, h ExportHeader) *ExportWriter {
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	// Evidence embeds signed tokens: never rewrite their characters.
	enc.SetEscapeHTML(false)
	x := &ExportWriter{bw: bw, enc: enc}
	h.Format = ExportFormat
	x.Record(h)
	return x
}

// Signed writes stored signed bytes verbatim as one line.
func (x *ExportWriter) Signed(raw []byte) error {
	if x.err == nil && bytes.ContainsAny(raw, "\r\n") {
		x.err = errors.New("export: a stored object contains a line break")
	}
	if x.err == nil {
		_, x.err = x.bw.Write(raw)
	}
	if x.err == nil {
		x.err = x.bw.WriteByte('\n')
	}
	return x.err
}

// Record writes v as one JSON line.
func (x *ExportWriter) Record(v any) error {
	if x.err == nil {
		x.err = x.enc.Encode(v) // Encode ends the line
	}
	return x.err
}

// Flush writes out buffered lines.
func (x *ExportWriter) Flush() error {
	if x.err == nil {
		x.err = x.bw.Flush()
	}
	return x.err
}
