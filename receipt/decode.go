package receipt

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// Decode decodes receipt bytes read back from the kernel's own store, for
// filtering and aggregation. It is several times cheaper than Parse because
// it skips Parse's separate strictness pass (duplicate names and invalid
// UTF-8 are still rejected by the decoder; unknown members are rejected).
// It never verifies the signature: use it to answer queries, never to decide
// whether a receipt is authentic (that is Verify, or VerifyExport).
func Decode(raw []byte) (*Receipt, error) {
	var r Receipt
	if err := jsonv2.Unmarshal(raw, &r, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%w: schema %q", ErrInvalid, r.Schema)
	}
	if err := r.validateShape(); err != nil {
		return nil, err
	}
	return &r, nil
}
