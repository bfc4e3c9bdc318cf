package cli

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// servedReceipt is a receipt chiod answered, checked before anything of it
// is shown: its signature by the kernel key the auditor trusts. chiod, or
// anything between it and the auditor, may answer anything; a receipt is
// the kernel's word only if the kernel key signed it. That it is in the
// log (a checkpoint's inclusion proof) is `chio receipt verify ID`.
func servedReceipt(raw json.RawMessage, key keys.PublicKey) (*receipt.Receipt, error) {
	rc, err := receipt.Verify(raw, key)
	if err == nil {
		return rc, nil
	}
	what := "a receipt"
	if d, derr := receipt.Decode(raw); derr == nil { // unverified: only to say which
		what = fmt.Sprintf("receipt %s (seq %d)", d.ID, d.Seq)
	}
	return nil, fmt.Errorf("%s from the server does not verify with kernel key %s (%v): it is not the kernel's receipt", what, key, err)
}
