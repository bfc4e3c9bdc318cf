// Package recordjson encodes the records the stores keep — calls, approval
// requests, standing approvals — as JSON that leaves the bytes of their raw
// members alone. Both stores use it, so that what one stores the other
// would store byte for byte.
package recordjson

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping. encoding/json writes "<",
// ">" and "&" as \u003c, \u003e and \u0026 — inside json.RawMessage members
// too: the same JSON value, but not the bytes they held. A call's arguments
// and intent must stay the canonical bytes parameter_hash covers (an
// approved call is sent to its tool from its stored record), an approval's
// the bytes its approvers were shown, and a vote's token the bytes the
// approver signed and sent.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil // Encode ends every value with one
}
