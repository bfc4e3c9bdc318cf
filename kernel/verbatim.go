package kernel

import (
	"bytes"
	"encoding/json"
)

// marshalVerbatim is json.Marshal without HTML escaping. encoding/json
// writes '<', '>' and '&' as \u003c, \u003e and \u0026 — inside
// json.RawMessage members too: the same value, but not the bytes they
// held. What the kernel hands on (events for approvers, an answered
// question's output for the agent) carries a call's arguments and intent
// and an approver's signed answers, which must arrive as they are.
func marshalVerbatim(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil // Encode ends every value with one
}
