package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// servedReceipt is a receipt chiod answered, checked before anything of it
// is shown: its signature by the kernel key the auditor trusts, over the
// very bytes the kernel stored (the canonical form: --output jsonl prints
// them as they are, for offline verification). chiod, or anything between
// it and the auditor, may answer anything; a receipt is the kernel's word
// only if the kernel key signed it. That it is in the log (a checkpoint's
// inclusion proof) is `chio receipt verify ID`.
func servedReceipt(raw json.RawMessage, key keys.PublicKey) (*receipt.Receipt, error) {
	rc, err := receipt.VerifyCanonical(raw, key)
	if err == nil {
		return rc, nil
	}
	what := "a receipt"
	if d, derr := receipt.Decode(raw); derr == nil { // unverified: only to say which
		what = fmt.Sprintf("receipt %s (seq %d)", d.ID, d.Seq)
	}
	if errors.Is(err, receipt.ErrNotCanonical) {
		return nil, fmt.Errorf("%s from the server is re-encoded (%v): not shown as the kernel's", what, err)
	}
	return nil, fmt.Errorf("%s from the server does not verify with kernel key %s (%v): it is not the kernel's receipt", what, key, err)
}
