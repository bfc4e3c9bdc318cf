package receipt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// Signature domains of the approvers' tokens (approval/token.go owns the
// types; the auditor needs only these fields and the rule of SPEC §2).
const (
	approvalTokenSchema = "chio.approval-token.v1"
	batchTokenSchema    = "chio.batch-approval.v1"
)

// MaxExportLine bounds one line of an export before anything parses it.
const MaxExportLine = 16 << 20

// VerifyOptions configures VerifyExport.
type VerifyOptions struct {
	// KernelKey is the key the auditor trusts. Required: the key an export
	// names for itself proves nothing.
	KernelKey keys.PublicKey
	// Workers checks signatures in parallel; 0 means GOMAXPROCS.
	Workers int
	// MaxProblems caps how many problems are listed (all are counted);
	// 0 means 200.
	MaxProblems int
	// Pinned are signed checkpoints obtained independently of the export
	// (saved earlier by the auditor, or fetched from chiod apart from the
	// export): the export must reach and match each (see verify_pinned.go).
	// Each must verify with KernelKey, or VerifyExport returns an error.
	Pinned [][]byte
}

// Problem is one failed check and where it was found.
type Problem struct {
	Line      int    `json:"line,omitempty"` // line in the export, 1-based
	Seq       uint64 `json:"seq,omitempty"`
	ReceiptID string `json:"receipt_id,omitempty"`
	Message   string `json:"message"`
}

func (p Problem) String() string {
	s := ""
	if p.Line > 0 {
		s = fmt.Sprintf("line %d: ", p.Line)
	}
	if p.ReceiptID != "" {
		s += fmt.Sprintf("receipt %s (seq %d): ", p.ReceiptID, p.Seq)
	}
	return s + p.Message
}

// VerifyReport is what VerifyExport found.
type VerifyReport struct {
	KernelKey   string `json:"kernel_key"`
	Receipts    uint64 `json:"receipts"`
	LastSeq     uint64 `json:"last_seq"`
	Checkpoints int    `json:"checkpoints"` // signed and matching the receipts
	// CheckpointFailures are checkpoints that failed a check (signature,
	// size, root); each is also a Problem.
	CheckpointFailures int         `json:"checkpoint_failures"`
	Latest             *Checkpoint `json:"latest_checkpoint,omitempty"`
	// Pinned are the pinned checkpoints (VerifyOptions.Pinned, in order)
	// the export reaches and matches; each other one is a Problem.
	Pinned    []*Checkpoint `json:"pinned_checkpoints,omitempty"`
	Uncovered uint64        `json:"uncovered"` // receipts after the latest checkpoint
	Chains    int           `json:"approval_chains"`
	Pending   int           `json:"pending_approvals"` // incomplete, no final receipt yet
	// Deliveries are the delivery outcomes (a failed or unknown delivery's
	// incomplete receipt) linked to their allow receipts.
	Deliveries int `json:"delivery_outcomes"`
	// Tokens are the approval tokens verified and vouched for by a signed
	// final receipt (its deciding token, approvers or dissenters).
	Tokens int `json:"approval_tokens"`
	// Unvouched are valid tokens that a final receipt signed before chio
	// named dissenting votes neither names nor excludes (see
	// verify_votes.go): not checked, neither failed nor counted in Tokens.
	Unvouched    int       `json:"unvouched_approval_tokens"`
	BatchTokens  int       `json:"batch_tokens"`
	Problems     []Problem `json:"problems"`
	ProblemCount int       `json:"problem_count"`
}

// OK reports whether every check passed.
func (r *VerifyReport) OK() bool { return r.ProblemCount == 0 }

// VerifyExport checks an export (see ExportFormat) end to end:
//
//   - every receipt's signature, by the trusted kernel key, over the bytes
//     in the file, which must be the canonical form the kernel stored (a
//     re-encoding verifies too, but is not the kernel's Merkle leaf);
//   - seqs run 1, 2, 3, … with no hole, repeat or reordering, ids are unique,
//     and the header's receipt count matches;
//   - every checkpoint's signature, and its root equals the RFC 6962 root
//     recomputed from the receipts at its tree_size; at least one must pass
//     (an export always carries one, even of an empty log), else nothing in
//     the file is shown to be the kernel's log;
//   - each pinned checkpoint (opts.Pinned): the export holds at least its
//     tree_size receipts and their root at that size is its root. Only this
//     detects receipts cut after the export's own latest checkpoint (with
//     that checkpoint and the unsigned header count edited): the file alone
//     cannot tell such a cut from an older export;
//   - approval chains (verify_chain.go): each allow, deny or cancelled
//     receipt with previous_receipt_id points to an earlier incomplete
//     receipt with the same request_id and approval_request_id, and each
//     incomplete receipt has at most one final;
//     the final is for the same call (subject, tool, capability_id, and
//     parameter_hash unless marked amended with both hashes and decided by a
//     token carrying amended_arguments; verify_binding.go);
//   - delivery outcomes (verify_delivery.go): each incomplete receipt
//     without approval_request_id has a previous_receipt_id naming an
//     earlier allow receipt of the same call (request_id, capability_id,
//     subject, tool, action, parameter_hash, delivery semantics), and each
//     allow receipt has at most one; no incomplete receipt has both
//     fields or neither (verify_chain.go);
//   - approval evidence: each token's signature by its approver, request_id =
//     approval_request_id, governed_intent_hash = the incomplete receipt's
//     parameter_hash, subject = the call's subject, approver ∈
//     trusted_approvers (or the kernel itself for an auto_approved receipt),
//     times the kernel would accept (lifetime in (0, 3600] s, expiring after
//     the incomplete receipt, issued ≤ 60 s after the final receipt),
//     and the deciding token's decision and approver match the final receipt;
//     each batch-approved receipt's batch token is signed by its approver
//     and covers it (subject, server/tool patterns, window; batchCovers),
//     and every batch token in the file is named by some receipt;
//   - votes (verify_votes.go): every key the signed final receipt names
//     (approval_token_id's approver, metadata approvers and dissenters) has
//     a token in the evidence deciding as the receipt says, and every token
//     in the evidence is by a key the receipt names: trusted_approvers is
//     unsigned, so only the receipt vouches that a vote was counted.
//
// Lines are checked in the order the format fixes, as they are read:
// a checkpoint against the receipts before it, evidence against the
// receipts before it (a receipt after evidence fails). Nothing is kept of
// a line the kernel key does not authenticate beyond its Problem, so the
// verifier's memory is bounded by the kernel's log, not by the file.
//
// It returns an error only when the input cannot be read (or holds a line
// longer than MaxExportLine) or a pinned checkpoint does not verify; every
// failed check is a Problem in the report.
func VerifyExport(in io.Reader, opts VerifyOptions) (*VerifyReport, error) {
	if opts.KernelKey.IsZero() {
		return nil, errors.New("verify: a trusted kernel key is required")
	}
	pinned, err := verifyPinned(opts.Pinned, opts.KernelKey)
	if err != nil {
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 200
	}
	v := &verifier{opts: opts, pinned: pinned, rep: &VerifyReport{KernelKey: opts.KernelKey.String(), Problems: []Problem{}},
		ids: map[string]logged{}, delivered: map[string]string{}, incomplete: map[string]*chainLink{}, byApproval: map[string]*chainLink{},
		tree: &Tree{}, approvalFinals: map[string][]*final{}, approvalEvidence: map[string]int{}, batchUses: map[string]*batchUse{},
		autoFinal: map[string]bool{}, expect: 1}
	// Pipeline: the reader cuts chunks, workers check whole chunks in
	// parallel (signatures dominate), and this goroutine folds them in file
	// order as each completes, so no core waits for the order-dependent part.
	work := make(chan *chunk, v.opts.Workers)
	order := make(chan *chunk, 2*v.opts.Workers)
	readErr := make(chan error, 1)
	go func() { readErr <- readChunks(in, work, order) }()
	var wg sync.WaitGroup
	for w := 0; w < v.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				for i := range c.items {
					checkLine(&c.items[i], v.opts.KernelKey)
				}
				close(c.done)
			}
		}()
	}
	for c := range order {
		<-c.done
		for i := range c.items {
			v.sequential(&c.items[i])
		}
	}
	wg.Wait()
	if err := <-readErr; err != nil {
		return nil, err
	}
	if afterFold != nil {
		afterFold()
	}
	v.finish()
	return v.rep, nil
}

// afterFold, set only by tests, runs once every line is folded and the
// pipeline has drained, before the checks that need the whole file: what
// the verifier holds then is what it keeps of the file.
var afterFold func()

type chunk struct {
	items []item
	done  chan struct{} // closed once every item is checked
}

// chunkLines is how many lines are verified in parallel at a time (a
// variable so tests can exercise chunk edges cheaply).
var chunkLines = 4096

// chunkBytes also ends a chunk once its lines hold this many bytes, so the
// few chunks in flight (3·Workers+1) bound memory whatever the export holds:
// counting lines alone, an export of long lines was read into memory whole.
const chunkBytes = 4 << 20

func readChunks(in io.Reader, work, order chan<- *chunk) error {
	defer close(order)
	defer close(work)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), MaxExportLine)
	// Lines are copied into large shared buffers, not one allocation each:
	// a million small objects are what the garbage collector pays for.
	var arena []byte
	c := &chunk{items: make([]item, 0, chunkLines), done: make(chan struct{})}
	send := func() {
		order <- c // first: the folder must learn the order before a worker can finish
		work <- c
		c = &chunk{items: make([]item, 0, chunkLines), done: make(chan struct{})}
	}
	size := 0 // bytes of lines in c
	line := 1
	for ; sc.Scan(); line++ {
		b := sc.Bytes()
		if cap(arena)-len(arena) < len(b) {
			arena = make([]byte, 0, max(chunkBytes, len(b)))
		}
		start := len(arena)
		arena = append(arena, b...)
		c.items = append(c.items, item{line: line, raw: arena[start:len(arena):len(arena)]})
		if size += len(b); len(c.items) == chunkLines || size >= chunkBytes {
			send()
			size = 0
		}
	}
	if len(c.items) > 0 {
		send()
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("verify: export line %d is longer than %d MiB: no receipt, checkpoint or evidence record is; refusing the file", line, MaxExportLine>>20)
	} else if err != nil {
		return fmt.Errorf("verify: reading export: %w", err)
	}
	return nil
}

// verifier is the state of one VerifyExport. It keeps only what the kernel
// key authenticated (receipts whose signature verifies, valid checkpoints)
// and what such receipts name: a line it cannot authenticate is a Problem
// the moment it is folded and leaves nothing behind, so the memory a file
// of junk takes is bounded (the Problems listed, each cut to maxQuoted)
// whatever its size. Hence the order the export format fixes (export.go):
// checkpoints are checked against the receipts before them, and evidence
// against the receipts before it.
type verifier struct {
	opts    VerifyOptions
	pinned  []*Checkpoint // verified, from opts.Pinned
	rep     *VerifyReport
	header  *ExportHeader
	lines   int
	expect  uint64 // next seq
	prevSeq uint64
	// tree holds the leaves of the receipts read, while each was signed by
	// the kernel key and had the next seq. brokenAt is the first receipt
	// line that was not: from there on the receipts are not the kernel's
	// log, no root over them can be a checkpoint's, and no leaf is kept.
	tree       *Tree
	brokenAt   int
	ids        map[string]logged // verified receipt id → its line and call
	delivered  map[string]string // allow receipt id → its delivery outcome's id
	incomplete map[string]*chainLink
	byApproval map[string]*chainLink
	finals     []*final
	// approvalFinals and batchUses are the finals by the approval request
	// or batch approval they name; approvalEvidence maps such a request to
	// the line of its evidence, once read.
	approvalFinals   map[string][]*final
	approvalEvidence map[string]int
	batchUses        map[string]*batchUse
	evidenceFrom     int             // line of the first evidence record, 0 before it
	autoFinal        map[string]bool // final receipt id → auto_approved
}

// batchUse is the receipts naming one batch approval and the line of its
// evidence, once read.
type batchUse struct {
	finals       []*final
	evidenceLine int
}

// maxQuoted bounds what a Problem quotes from the file: an id or a
// message can carry a line's worth (up to MaxExportLine) of junk.
const maxQuoted = 1 << 10

func (v *verifier) problem(line int, rc *Receipt, format string, args ...any) {
	v.rep.ProblemCount++
	if len(v.rep.Problems) >= v.opts.MaxProblems {
		return
	}
	p := Problem{Line: line, Message: cut(fmt.Sprintf(format, args...), 4*maxQuoted)}
	if rc != nil {
		p.Seq, p.ReceiptID = rc.Seq, cut(rc.ID, maxQuoted)
	}
	v.rep.Problems = append(v.rep.Problems, p)
}

// sequential folds one checked line into the order-dependent checks.
func (v *verifier) sequential(it *item) {
	v.lines = it.line
	if it.line == 1 && it.kind != kindHeader {
		v.problem(1, nil, "missing export header (want format %s)", ExportFormat)
	}
	switch it.kind {
	case kindBad:
		v.problem(it.line, nil, "%v", it.err)
	case kindHeader:
		switch {
		case it.line != 1:
			v.problem(it.line, nil, "export header after line 1")
		case it.err != nil:
			v.problem(it.line, nil, "%v", it.err)
		case it.header.Format != ExportFormat:
			v.problem(it.line, nil, "export format %q, want %s", it.header.Format, ExportFormat)
		default:
			v.header = it.header
			if it.header.KernelKey != v.opts.KernelKey.String() {
				v.problem(it.line, nil, "export names kernel key %s, verifying against the trusted key %s", it.header.KernelKey, v.opts.KernelKey)
			}
		}
	case kindReceipt:
		v.receipt(it)
	case kindCheckpoint:
		v.checkpoint(it)
	case kindApproval, kindBatch:
		if v.evidenceFrom == 0 {
			v.evidenceFrom = it.line
		}
		switch {
		case it.err != nil:
			v.problem(it.line, nil, "%v", it.err)
		case it.kind == kindApproval:
			v.approvalRecord(it.ev)
		default:
			v.batchRecord(it.ev)
		}
	}
}

func (v *verifier) receipt(it *item) {
	rc := it.rc
	v.rep.Receipts++
	if v.evidenceFrom != 0 {
		v.problem(it.line, rc, "receipt after the approval evidence (from line %d): an export lists every receipt first, and evidence is checked against the receipts before it", v.evidenceFrom)
	}
	// Only the kernel's receipt of the next seq is its log's next leaf.
	if v.brokenAt == 0 && it.err == nil && rc.Seq == v.expect {
		v.tree.Append(it.leaf)
	} else if v.brokenAt == 0 {
		v.brokenAt = it.line
	}
	if it.err != nil {
		if errors.Is(it.err, signed.ErrBadSignature) {
			v.problem(it.line, rc, "signature does not verify with the kernel key (%v)", it.err)
		} else {
			v.problem(it.line, rc, "malformed receipt: %v", it.err)
		}
		if rc == nil { // undecodable: assume it holds the next seq, so one bad line is one problem
			v.prevSeq = v.expect
			v.expect++
			return
		}
	}
	switch {
	case rc.Seq == v.expect:
	case rc.Seq > v.expect:
		v.problem(it.line, rc, "seq gap: expected seq %d, found %d (receipts %d..%d are missing)", v.expect, rc.Seq, v.expect, rc.Seq-1)
	default:
		v.problem(it.line, rc, "out of order: seq %d after seq %d", rc.Seq, v.prevSeq)
	}
	v.prevSeq = rc.Seq
	if rc.Seq >= v.expect {
		v.expect = rc.Seq + 1
	}
	v.rep.LastSeq = max(v.rep.LastSeq, rc.Seq)
	if it.err != nil {
		return // an unauthenticated receipt says nothing, and nothing of it is kept
	}
	if first, dup := v.ids[rc.ID]; dup {
		v.problem(it.line, rc, "duplicate receipt id (first at line %d)", first.line)
		return // a receipt read again adds nothing to its chain
	}
	v.ids[rc.ID] = logged{line: it.line, allow: rc.Decision.Verdict == Allow, call: it.call}
	v.chain(it.line, rc, it.call)
}

// finish runs the checks that need the whole file.
func (v *verifier) finish() {
	if v.lines == 0 {
		v.problem(0, nil, "empty export")
		return
	}
	if v.header != nil && v.header.Receipts != v.rep.Receipts {
		v.problem(1, nil, "header announces %d receipts, the file holds %d", v.header.Receipts, v.rep.Receipts)
	}
	for _, l := range v.incomplete {
		if l.final == "" {
			v.rep.Pending++
		}
	}
	v.merkle()
	for _, f := range v.finals {
		switch {
		case f.checked:
		case f.batchID != "":
			v.problem(f.line, f.rc, "no batch evidence for batch_approval_id %s", f.batchID)
		default:
			v.problem(f.line, f.rc, "no approval evidence for approval_request_id %s (token %s)", metaStr(f.rc, "approval_request_id"), f.tokenID)
		}
	}
}

// checkpoint checks a checkpoint line against the receipts before it
// (the export lists every receipt first).
func (v *verifier) checkpoint(it *item) {
	n := v.rep.Receipts
	if it.err != nil {
		size := "?"
		if it.cp != nil {
			size = fmt.Sprint(it.cp.TreeSize)
		}
		v.problem(it.line, nil, "checkpoint tree_size %s: %v", size, it.err)
		v.rep.CheckpointFailures++
		return
	}
	cp := it.cp
	switch {
	case cp.TreeSize > n:
		v.problem(it.line, nil, "checkpoint tree_size %d covers more receipts than the export holds (%d) before it", cp.TreeSize, n)
	case cp.TreeSize > v.tree.Size():
		// The receipt at brokenAt is not the kernel's receipt of its
		// position, so its leaf is not the kernel's leaf there: the root
		// over it cannot be the signed one.
		v.problem(it.line, nil, "checkpoint tree_size %d: root_hash %s does not match the root recomputed from the receipts: the receipt at line %d, within it, is not the kernel's receipt of that seq", cp.TreeSize, cp.RootHash, v.brokenAt)
	default:
		root, _ := v.tree.Root(cp.TreeSize)
		if want, _ := cp.Root(); root != want {
			v.problem(it.line, nil, "checkpoint tree_size %d: root_hash %s does not match the root recomputed from the receipts (%s)", cp.TreeSize, cp.RootHash, HashHex(root))
			break
		}
		v.rep.Checkpoints++
		if v.rep.Latest == nil || cp.TreeSize > v.rep.Latest.TreeSize {
			v.rep.Latest = cp
		}
		return
	}
	v.rep.CheckpointFailures++
}

func (v *verifier) merkle() {
	n := v.rep.Receipts
	v.checkPinned(n)
	if v.rep.Latest == nil {
		// Even an empty log's export carries the checkpoint of size 0 that
		// chiod signs when it starts: without one, nothing says these
		// receipts (or their absence) are the kernel's whole log.
		v.problem(0, nil, "no valid signed checkpoint in the export: nothing in it proves it is the kernel's log (an export always carries one, even of an empty log)")
		return
	}
	v.rep.Uncovered = n - v.rep.Latest.TreeSize
}

// cut shortens s to at most n bytes, at a rune boundary, saying how much
// it left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:i], len(s)-i)
}
