// Package jsonexact encodes JSON that keeps the characters of its strings
// and the bytes of its raw members: encoding/json without HTML escaping.
//
// encoding/json writes "<", ">" and "&" as \u003c, \u003e and \u0026 —
// inside json.RawMessage members too: the same JSON value, but not the
// bytes they held. chio hands on bytes that must arrive as they are: a
// call's arguments and intent (the canonical bytes parameter_hash covers,
// which the tool receives and approvers are shown), a tool's output, an
// approver's signed token and answers. Every writer of such JSON — the
// stores' records, chiod's answers and events, webhook payloads, the CLI's
// requests and output — encodes with this package.
package jsonexact

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) { return encode(v, "", "") }

// MarshalIndent is json.MarshalIndent without HTML escaping.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) { return encode(v, prefix, indent) }

func encode(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if prefix != "" || indent != "" {
		enc.SetIndent(prefix, indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil // Encode ends every value with one
}
