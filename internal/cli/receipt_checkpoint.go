package cli

// Checkpoints the auditor keeps: an export proves the log only as far as its
// own checkpoints, and whoever hands it over could cut receipts after the
// last one it keeps. A checkpoint saved apart from the export (here), pinned
// when verifying (--checkpoint FILE), catches that cut; a later checkpoint
// is proven to extend a saved one by the server's consistency proof.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/chiokernel/chio/internal/atomicfile"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt checkpoint", "print (or --out FILE) chiod's latest signed checkpoint, verified; --since FILE proves it extends a saved one", runReceiptCheckpoint)
}

// maxCheckpoint bounds a checkpoint read from the server or a file.
const maxCheckpoint = 64 << 10

func runReceiptCheckpoint(e *Env, args []string) int {
	fs := newFlags(e, "receipt checkpoint")
	r := addRemote(fs, e)
	out := fs.String("out", "", "write the checkpoint to FILE (default: stdout); a checkpoint already there must be extended, as with --since")
	since := fs.String("since", "", "a checkpoint saved earlier: prove the latest extends it (consistency proof)")
	force := fs.Bool("force", false, "with --out: replace FILE even if it holds a newer or unrelated checkpoint, or none")
	keyText := fs.String("kernel-key", "", "the kernel's public key (ed25519:…) you trust; default: ask the server")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("receipt checkpoint", pos, 0); err != nil {
		return fail(e, err)
	}
	// A pin given an empty value would be no pin: refused (flag_empty.go).
	if err := refuseEmptyFlags(fs, "receipt checkpoint", "kernel-key", "since"); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(time.Minute)
	defer cancel()
	key, err := trustedKernelKey(ctx, e, r, *keyText)
	if err != nil {
		return fail(e, err)
	}
	var saved []savedPin
	if *since != "" {
		_, cp, err := readCheckpointFile(*since, key)
		if err != nil {
			return fail(e, err)
		}
		saved = append(saved, savedPin{cp, *since})
	}
	if *out != "" && !*force && *out != *since {
		// The file --out would replace is the auditor's pin: an implicit
		// --since, so a stale or rolled-back server cannot swap it for an
		// older checkpoint. Nothing verifiable there is refused too.
		cp, err := existingPin(*out, key)
		if err != nil {
			return fail(e, err)
		}
		if cp != nil {
			saved = append(saved, savedPin{cp, *out})
		}
	}
	raw, cp, err := latestCheckpoint(ctx, r, key)
	if err != nil {
		return fail(e, err)
	}
	summary := fmt.Sprintf("checkpoint tree_size %d, root %s, signed %s by kernel key %s: signature valid",
		cp.TreeSize, cp.RootHash, cpTime(cp), key)
	for _, s := range saved {
		// The served latest must not be older than the saved one: a stale
		// or rolled-back view would otherwise replace the auditor's pin
		// (--out) with a smaller tree, and a log cut back to it would pass.
		if cp.TreeSize < s.cp.TreeSize {
			return fail(e, fmt.Errorf("the server's latest checkpoint (tree_size %d) is older than %s (tree_size %d): the log shrank or the server serves a stale view; %s is left as it was",
				cp.TreeSize, s.source, s.cp.TreeSize, s.source))
		}
		if err := checkConsistent(ctx, r, s.cp, cp); err != nil {
			return fail(e, fmt.Errorf("the latest checkpoint does not extend %s: %w", s.source, err))
		}
		summary += fmt.Sprintf("\nconsistent with %s (tree_size %d): the log only grew since", s.source, s.cp.TreeSize)
	}
	line := append(bytes.Clone(raw), '\n')
	if *out == "" {
		e.Stdout.Write(line)
		fmt.Fprintln(e.Stderr, summary)
		return ExitOK
	}
	if err := atomicfile.Write(*out, line); err != nil { // the auditor's pin: durable
		return fail(e, err)
	}
	fmt.Fprintf(e.Stdout, "%s\nsaved to %s; later: chio receipt verify --file EXPORT --checkpoint %s --kernel-key KEY\n", summary, *out, *out)
	return ExitOK
}

// savedPin is a checkpoint saved earlier that the latest must extend.
type savedPin struct {
	cp     *receipt.Checkpoint
	source string
}

// existingPin returns the checkpoint already saved at path (nil if there is
// no file). A file that is there but holds no checkpoint signed by key is
// an error: it is not this command's to replace without --force.
func existingPin(path string, key keys.PublicKey) (*receipt.Checkpoint, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	_, cp, err := readCheckpointFile(path, key)
	if err != nil {
		return nil, fmt.Errorf("--out %s exists and does not hold a checkpoint this command can check (%w); refusing to replace it (--force replaces it)", path, err)
	}
	return cp, nil
}

func cpTime(cp *receipt.Checkpoint) string {
	return time.UnixMilli(cp.Timestamp).UTC().Format(time.RFC3339)
}

// latestCheckpoint fetches GET /v1/checkpoints/latest and verifies its
// signature by key: the raw bytes (what to save or pin) and parsed form.
func latestCheckpoint(ctx context.Context, r *remote, key keys.PublicKey) ([]byte, *receipt.Checkpoint, error) {
	body, err := r.stream(ctx, "/v1/checkpoints/latest")
	if err != nil {
		return nil, nil, err
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, maxCheckpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the latest checkpoint: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	cp, err := receipt.VerifyCheckpoint(raw, key)
	if err != nil {
		return nil, nil, fmt.Errorf("the server's latest checkpoint: %w", err)
	}
	return raw, cp, nil
}

// readCheckpointFile reads a saved checkpoint and verifies its signature.
func readCheckpointFile(path string, key keys.PublicKey) ([]byte, *receipt.Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxCheckpoint))
	if err != nil {
		return nil, nil, err
	}
	raw = bytes.TrimSpace(raw)
	cp, err := receipt.VerifyCheckpoint(raw, key)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return raw, cp, nil
}

// checkConsistent proves that the larger of two verified checkpoints
// extends the smaller, with the server's consistency proof (equal sizes
// must have equal roots). Either way round: a log that shrank fails.
func checkConsistent(ctx context.Context, r *remote, a, b *receipt.Checkpoint) error {
	if a.TreeSize > b.TreeSize {
		a, b = b, a
	}
	rootA, err := a.Root()
	if err != nil {
		return err
	}
	rootB, err := b.Root()
	if err != nil {
		return err
	}
	if a.TreeSize == b.TreeSize {
		if rootA != rootB {
			return fmt.Errorf("two checkpoints of tree_size %d with different roots (%s, %s): not one log", a.TreeSize, a.RootHash, b.RootHash)
		}
		return nil
	}
	var p receipt.ConsistencyProof
	if _, err := r.do(ctx, "GET", fmt.Sprintf("/v1/checkpoints/consistency?from=%d&to=%d", a.TreeSize, b.TreeSize), nil, &p); err != nil {
		return fmt.Errorf("consistency proof %d→%d: %w", a.TreeSize, b.TreeSize, err)
	}
	if p.From != a.TreeSize || p.To != b.TreeSize {
		return fmt.Errorf("the server answered a consistency proof %d→%d for %d→%d", p.From, p.To, a.TreeSize, b.TreeSize)
	}
	if err := p.Verify(rootA, rootB); err != nil {
		return fmt.Errorf("consistency proof %d→%d: %w", a.TreeSize, b.TreeSize, err)
	}
	return nil
}
