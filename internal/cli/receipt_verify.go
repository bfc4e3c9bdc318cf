package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt verify [ID]", "verify one receipt (signature + Merkle proof), --all (the whole log, up to chiod's latest checkpoint) or --file EXPORT (offline; --checkpoint FILE pins a saved checkpoint)", runReceiptVerify)
}

func runReceiptVerify(e *Env, args []string) int {
	fs := newFlags(e, "receipt verify")
	r := addRemote(fs, e)
	all := fs.Bool("all", false, "verify the whole log served by chiod")
	file := fs.String("file", "", "verify an export file offline (needs --kernel-key)")
	keyText := fs.String("kernel-key", "", "the kernel's public key (ed25519:…) you trust; default: ask the server")
	pinFile := fs.String("checkpoint", "", "a checkpoint saved earlier (chio receipt checkpoint --out FILE): the log verified must extend it")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	// A pin given an empty value would be no pin: refused (flag_empty.go).
	if err := refuseEmptyFlags(fs, "receipt verify", "kernel-key", "checkpoint"); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	modes := len(pos)
	if *all {
		modes++
	}
	if *file != "" {
		modes++
	}
	switch {
	case len(pos) > 1:
		return fail(e, usageErr("receipt verify", "unexpected argument %q (one receipt id at a time)", pos[1]))
	case modes != 1:
		return fail(e, usageErr("receipt verify", "give exactly one of ID, --all or --file EXPORT"))
	}
	if *file != "" {
		if *keyText == "" {
			return fail(e, usageError("--file needs --kernel-key: an export cannot vouch for its own key"))
		}
		key, err := keys.ParsePublicKey(*keyText)
		if err != nil {
			return fail(e, usageError("--kernel-key: "+err.Error()))
		}
		var pins []pin
		if *pinFile != "" {
			raw, cp, err := readCheckpointFile(*pinFile, key)
			if err != nil {
				return fail(e, err)
			}
			pins = append(pins, pin{raw, cp, *pinFile})
		}
		f, err := os.Open(*file)
		if err != nil {
			return fail(e, err)
		}
		defer f.Close()
		return verifyExport(e, r, f, key, *file, pins)
	}
	ctx, cancel := ctxTimeout(time.Hour)
	defer cancel()
	key, err := trustedKernelKey(ctx, e, r, *keyText)
	if err != nil {
		return fail(e, err)
	}
	var saved *pin
	if *pinFile != "" {
		raw, cp, err := readCheckpointFile(*pinFile, key)
		if err != nil {
			return fail(e, err)
		}
		saved = &pin{raw, cp, *pinFile}
	}
	if !*all {
		return verifyOne(ctx, e, r, pos[0], key, saved)
	}
	// The server's latest signed checkpoint, fetched before the export: the
	// export (which chiod covers with a checkpoint at least as new) must
	// reach it and match it, so an export cut on its way here fails.
	raw, cp, err := latestCheckpoint(ctx, r, key)
	if err != nil {
		return fail(e, err)
	}
	pins := []pin{{raw, cp, r.base() + "/v1/checkpoints/latest"}}
	if saved != nil {
		pins = append(pins, *saved)
	}
	body, err := r.stream(ctx, "/v1/export")
	if err != nil {
		return fail(e, err)
	}
	defer body.Close()
	return verifyExport(e, r, body, key, r.base()+"/v1/export", pins)
}

// pin is a checkpoint obtained apart from the export, and where from.
type pin struct {
	raw    []byte
	cp     *receipt.Checkpoint
	source string
}

// trustedKernelKey is --kernel-key, or else the server's own word for it,
// which the auditor is told is what they are trusting.
func trustedKernelKey(ctx context.Context, e *Env, r *remote, text string) (keys.PublicKey, error) {
	if text != "" {
		k, err := keys.ParsePublicKey(text)
		if err != nil {
			return k, usageError("--kernel-key: " + err.Error())
		}
		return k, nil
	}
	var h struct {
		KernelKey string `json:"kernel_key"`
	}
	if _, err := r.do(ctx, "GET", "/healthz", nil, &h); err != nil {
		return keys.PublicKey{}, err
	}
	k, err := keys.ParsePublicKey(h.KernelKey)
	if err != nil {
		return k, fmt.Errorf("the server's kernel_key: %w", err)
	}
	fmt.Fprintf(e.Stderr, "chio: trusting kernel key from the server: %s\n"+
		"      (pass --kernel-key with a key obtained independently to detect a server that lies)\n", k)
	return k, nil
}

// ProofCheck is `verify ID`'s result.
type proofCheck struct {
	ReceiptID  string `json:"receipt_id"`
	Seq        uint64 `json:"seq"`
	KernelKey  string `json:"kernel_key"`
	TreeSize   uint64 `json:"tree_size"`
	RootHash   string `json:"root_hash"`
	Checkpoint int64  `json:"checkpoint_timestamp"`
	// ConsistentWith is the tree_size of the saved checkpoint (--checkpoint)
	// proven to be of the same log.
	ConsistentWith uint64 `json:"consistent_with_tree_size,omitempty"`
	OK             bool   `json:"ok"`
	Error          string `json:"error,omitempty"`
}

func verifyOne(ctx context.Context, e *Env, r *remote, id string, key keys.PublicKey, saved *pin) int {
	var resp struct {
		Receipt    json.RawMessage        `json:"receipt"`
		Checkpoint json.RawMessage        `json:"checkpoint"`
		Proof      receipt.InclusionProof `json:"proof"`
	}
	if _, err := r.do(ctx, "GET", "/v1/receipts/"+url.PathEscape(id)+"/proof", nil, &resp); err != nil {
		return fail(e, err)
	}
	res := proofCheck{ReceiptID: id, KernelKey: key.String()}
	err := func() error {
		rc, err := receipt.Verify(resp.Receipt, key)
		if err != nil {
			return fmt.Errorf("receipt signature: %w", err)
		}
		res.Seq = rc.Seq
		if rc.ID != id {
			return fmt.Errorf("the server answered receipt %s for %s", rc.ID, id)
		}
		cp, err := receipt.VerifyCheckpoint(resp.Checkpoint, key)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		res.TreeSize, res.RootHash, res.Checkpoint = cp.TreeSize, cp.RootHash, cp.Timestamp
		p := resp.Proof
		if p.TreeSize != cp.TreeSize || p.LeafIndex != rc.Seq-1 {
			return fmt.Errorf("proof is for leaf %d of a tree of %d, want leaf %d (seq %d) of the checkpoint's %d", p.LeafIndex, p.TreeSize, rc.Seq-1, rc.Seq, cp.TreeSize)
		}
		root, err := cp.Root()
		if err != nil {
			return err
		}
		if err := p.Verify(resp.Receipt, root); err != nil {
			return fmt.Errorf("inclusion proof: %w", err)
		}
		if saved != nil {
			if err := checkConsistent(ctx, r, saved.cp, cp); err != nil {
				return fmt.Errorf("the checkpoint is not consistent with %s: %w", saved.source, err)
			}
			res.ConsistentWith = saved.cp.TreeSize
		}
		return nil
	}()
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	if r.output != "table" {
		printJSON(e.Stdout, res, r.output == "jsonl")
	} else if res.OK {
		fmt.Fprintf(e.Stdout, "OK  receipt %s (seq %d)\n    signature: valid, kernel key %s\n    included in checkpoint tree_size %d, root %s, signed %s\n",
			shown(id), res.Seq, key, res.TreeSize, shown(res.RootHash), time.UnixMilli(res.Checkpoint).UTC().Format(time.RFC3339))
		if saved != nil {
			fmt.Fprintf(e.Stdout, "    consistent with the saved checkpoint tree_size %d (%s)\n", saved.cp.TreeSize, shown(saved.source))
		}
	} else {
		fmt.Fprintf(e.Stdout, "FAIL receipt %s: %s\n", shown(id), shown(res.Error))
	}
	if !res.OK {
		return ExitError
	}
	return ExitOK
}

func verifyExport(e *Env, r *remote, in io.Reader, key keys.PublicKey, source string, pins []pin) int {
	opts := receipt.VerifyOptions{KernelKey: key}
	for _, p := range pins {
		opts.Pinned = append(opts.Pinned, p.raw)
	}
	rep, err := receipt.VerifyExport(in, opts)
	if err != nil {
		return fail(e, err)
	}
	if r.output != "table" {
		printJSON(e.Stdout, rep, r.output == "jsonl")
	} else {
		printReport(e.Stdout, rep, source, pins)
	}
	if !rep.OK() {
		return ExitError
	}
	return ExitOK
}

// printReport prints every string shown escaped: problems quote text from
// the untrusted export (the header's unsigned kernel_key, receipt ids from
// lines whose signature failed, evidence ids), and escape sequences there
// could hide the FAIL lines or fake an OK report.
func printReport(w io.Writer, rep *receipt.VerifyReport, source string, pins []pin) {
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "FAIL", shown(p.String()))
	}
	if n := rep.ProblemCount - len(rep.Problems); n > 0 {
		fmt.Fprintf(w, "FAIL … and %d more problems\n", n)
	}
	fmt.Fprintf(w, "source:      %s\nkernel key:  %s\n", shown(source), shown(rep.KernelKey))
	fmt.Fprintf(w, "receipts:    %d (seq 1..%d), signatures checked\n", rep.Receipts, rep.LastSeq)
	checkpoints := fmt.Sprintf("%d valid", rep.Checkpoints)
	if rep.CheckpointFailures > 0 {
		checkpoints += fmt.Sprintf(", %d FAILED", rep.CheckpointFailures)
	}
	if cp := rep.Latest; cp != nil {
		fmt.Fprintf(w, "checkpoints: %s; latest valid tree_size %d, root %s matches the recomputed Merkle root\n", checkpoints, cp.TreeSize, shown(cp.RootHash))
		if rep.Uncovered > 0 {
			fmt.Fprintf(w, "             %d newer receipts are not covered by a valid checkpoint\n", rep.Uncovered)
		}
	} else {
		fmt.Fprintf(w, "checkpoints: %s\n", checkpoints)
	}
	for _, p := range pins {
		if reached(rep, p.cp) {
			fmt.Fprintf(w, "pinned:      checkpoint tree_size %d signed %s (from %s): the export reaches it and matches\n",
				p.cp.TreeSize, cpTime(p.cp), shown(p.source))
		}
	}
	if len(pins) == 0 && rep.Latest != nil {
		fmt.Fprintf(w, "not proven:  that the log ended at tree_size %d: receipts cut after it, with the checkpoints covering them, would go unseen;\n"+
			"             pin a checkpoint obtained apart from this file (chio receipt checkpoint --out FILE, then --checkpoint FILE)\n", rep.Latest.TreeSize)
	}
	fmt.Fprintf(w, "approvals:   %d chains linked, %d pending; %d approval tokens and %d batch tokens verified\n",
		rep.Chains, rep.Pending, rep.Tokens, rep.BatchTokens)
	fmt.Fprintf(w, "deliveries:  %d outcome receipts (a delivery failed or its outcome is unknown) linked to their allow receipts\n", rep.Deliveries)
	if rep.Unvouched > 0 {
		fmt.Fprintf(w, "not checked: %d approval tokens whose final receipts predate signed dissenting votes (metadata \"dissenters\") and do not name them:\n"+
			"             signature and binding checked, but no signed receipt says the kernel counted them (likely dissenting votes;\n"+
			"             their approvers are trusted only on the export's unsigned trusted_approvers)\n", rep.Unvouched)
	}
	if rep.OK() {
		fmt.Fprintln(w, "OK: every check passed")
	} else {
		fmt.Fprintf(w, "FAILED: %d problems\n", rep.ProblemCount)
	}
}

// reached reports whether the report lists cp among the pinned checkpoints
// the export reaches and matches.
func reached(rep *receipt.VerifyReport, cp *receipt.Checkpoint) bool {
	for _, got := range rep.Pinned {
		if got.TreeSize == cp.TreeSize && got.RootHash == cp.RootHash {
			return true
		}
	}
	return false
}
