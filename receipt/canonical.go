package receipt

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// A receipt has a fixed shape, so its RFC 8785 form can be written directly
// instead of marshalling, re-parsing and sorting: members are emitted in JCS
// order (names are ASCII, so byte order is UTF-16 order) and strings with
// jsontext.AppendQuote, which is RFC 8785's minimal escaping. Only the free
// form metadata goes through the generic canonicalizer. The equivalence with
// the generic path is tested on many receipts (canonical_test.go).

const maxSafe = 1 << 53

// signFast returns the canonical signed bytes of r (Schema and KernelKey
// already set, Signature empty).
func signFast(key keys.PrivateKey, r *Receipt) ([]byte, error) {
	if r.Seq > maxSafe || r.Timestamp > maxSafe || r.Timestamp < -maxSafe {
		return nil, fmt.Errorf("%w: seq or timestamp beyond 2^53", ErrInvalid)
	}
	// The signed message is the domain, a zero byte and the canonical
	// object (signed.Message): the object is written right after them in
	// one buffer, sized for the usual receipt, so that it is neither grown
	// nor copied before it is signed.
	b := make([]byte, 0, len(Schema)+1+receiptSize(r))
	b = append(b, Schema...)
	b = append(b, 0)
	start := len(b)
	// prefix: action … seq; suffix: subject … tool_server. The signature
	// member sorts between them ("seq" < "signature" < "subject").
	b = append(b, '{')
	b = str(b, "action", r.Action, false)
	b = str(b, "capability_id", r.CapabilityID, true)
	b = append(b, `,"decision":{`...)
	first := true
	if r.Decision.Guard != "" {
		b = str(b, "guard", r.Decision.Guard, false)
		first = false
	}
	if r.Decision.Reason != "" {
		b = str(b, "reason", r.Decision.Reason, !first)
		first = false
	}
	b = str(b, "verdict", r.Decision.Verdict, !first)
	b = append(b, '}')
	b = str(b, "id", r.ID, true)
	b = str(b, "kernel_key", r.KernelKey, true)
	b = append(b, `,"metadata":`...)
	b, err := appendMetadata(b, r.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
	}
	b = str(b, "parameter_hash", r.ParameterHash, true)
	b = str(b, "policy_hash", r.PolicyHash, true)
	b = str(b, "request_id", r.RequestID, true)
	b = str(b, "schema", r.Schema, true)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	cut := len(b)
	b = str(b, "subject", r.Subject, true)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, r.Timestamp, 10)
	b = str(b, "tool_name", r.ToolName, true)
	b = str(b, "tool_server", r.ToolServer, true)
	b = append(b, '}')

	sig := key.SignRaw(b) // signed.Message(Schema, b[start:])
	out := make([]byte, 0, len(b)-start+143)
	out = append(out, b[start:cut]...)
	out = append(out, `,"signature":"`...)
	out = hex.AppendEncode(out, sig)
	out = append(out, '"')
	out = append(out, b[cut:]...)
	return out, nil
}

// receiptSize is room for r's canonical form without its signature: the
// member names and punctuation (under 300 bytes), the strings (a few
// escapes each fit the slack), the numbers and a little metadata. A
// receipt that needs more grows the buffer; none is cut short.
func receiptSize(r *Receipt) int {
	return 512 + len(r.Action) + len(r.CapabilityID) + len(r.Decision.Guard) + len(r.Decision.Reason) +
		len(r.Decision.Verdict) + len(r.ID) + len(r.KernelKey) + len(r.ParameterHash) + len(r.PolicyHash) +
		len(r.RequestID) + len(r.Schema) + len(r.Subject) + len(r.ToolName) + len(r.ToolServer)
}

// appendMetadata appends the canonical form of m. The kernel's usual
// metadata, a few members with lower-case ASCII names and string values,
// is written directly: its members sorted by name (byte order is JCS's
// UTF-16 order for ASCII), strings quoted by AppendQuote as everywhere
// else here. Anything else (other value types, names that may fold
// together, which canon refuses, invalid UTF-8, which encoding/json
// replaces) goes through the generic canonicalizer, as all metadata did
// before; canonical_test.go holds the two paths to the same bytes.
func appendMetadata(b []byte, m map[string]any) ([]byte, error) {
	var names [8]string
	if m != nil && len(m) <= len(names) {
		n := names[:0]
		simple := true
		for k, v := range m {
			s, ok := v.(string)
			if !ok || canon.MayFold(k) || !utf8.ValidString(s) {
				simple = false
				break
			}
			n = append(n, k)
		}
		if simple {
			slices.Sort(n)
			b = append(b, '{')
			for i, k := range n {
				if i > 0 {
					b = append(b, ',')
				}
				b, _ = jsontext.AppendQuote(b, k)
				b = append(b, ':')
				b, _ = jsontext.AppendQuote(b, m[k].(string))
			}
			return append(b, '}'), nil
		}
	}
	meta, err := canon.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, meta...), nil
}

// str appends `"name":"value"` (with a leading comma when comma). Invalid
// UTF-8 in a value is an error upstream: AppendQuote would replace it, so
// validateShape's callers pass only strings built by the kernel.
func str(b []byte, name, value string, comma bool) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":`...)
	b, _ = jsontext.AppendQuote(b, value)
	return b
}

// Validate reports whether r can be signed: shape, UTF-8, number ranges and
// canonical metadata. The store calls it for each appended receipt so that a
// bad receipt fails only the decision that produced it.
func Validate(r *Receipt) error {
	if err := r.validateShape(); err != nil {
		return err
	}
	if r.Seq > maxSafe || r.Timestamp > maxSafe || r.Timestamp < -maxSafe {
		return fmt.Errorf("%w: seq or timestamp beyond 2^53", ErrInvalid)
	}
	if _, err := canon.Marshal(r.Metadata); err != nil {
		return fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
	}
	return nil
}
