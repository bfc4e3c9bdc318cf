package receipt

import (
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

// Pinned checkpoints: what an export alone cannot prove.
//
// An export's receipts, checkpoints and header come from whoever hands the
// file over. Whoever drops the last receipts together with the checkpoints
// covering them, and edits the header's unsigned receipt count, leaves a
// file that is exactly an honest export taken earlier: every signature
// verifies, seqs are contiguous, the remaining checkpoints match. Only a
// checkpoint the auditor obtained apart from the file can show that the log
// had grown past it: the export must then hold at least its tree_size
// receipts, and their Merkle root at that size must be its root (the same
// leaves give both roots, so this is the consistency of the two trees).

// verifyPinned checks each pinned checkpoint's signature by the trusted key.
// A pin that does not verify is the auditor's input error, not a finding
// about the export: it is refused before the export is read.
func verifyPinned(raws [][]byte, key keys.PublicKey) ([]*Checkpoint, error) {
	out := make([]*Checkpoint, 0, len(raws))
	for i, raw := range raws {
		cp, err := VerifyCheckpoint(raw, key)
		if err != nil {
			return nil, fmt.Errorf("verify: pinned checkpoint %d: %w", i+1, err)
		}
		out = append(out, cp)
	}
	return out, nil
}

// checkPinned holds the export's n receipts (v.tree) to every pinned
// checkpoint and lists those they reach and match.
func (v *verifier) checkPinned(n uint64) {
	for _, cp := range v.pinned {
		signed := time.UnixMilli(cp.Timestamp).UTC().Format(time.RFC3339)
		if cp.TreeSize > n {
			v.problem(0, nil, "the export holds %d receipts, but the independently obtained checkpoint tree_size %d (signed %s) shows the log held %d: receipts %d..%d are missing (the export was cut, or is older than that checkpoint)",
				n, cp.TreeSize, signed, cp.TreeSize, n+1, cp.TreeSize)
			continue
		}
		if cp.TreeSize > v.tree.Size() {
			v.problem(0, nil, "the export is not consistent with the independently obtained checkpoint tree_size %d (signed %s): the receipt at line %d, below that size, is not the kernel's receipt of that seq",
				cp.TreeSize, signed, v.brokenAt)
			continue
		}
		root, _ := v.tree.Root(cp.TreeSize)
		if want, _ := cp.Root(); root != want {
			v.problem(0, nil, "the export is not consistent with the independently obtained checkpoint tree_size %d (signed %s): its receipts give root %s at that size, the checkpoint says %s",
				cp.TreeSize, signed, HashHex(root), cp.RootHash)
			continue
		}
		v.rep.Pinned = append(v.rep.Pinned, cp)
	}
}
