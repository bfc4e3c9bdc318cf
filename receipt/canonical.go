package receipt

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
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
	meta, err := canon.Marshal(r.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
	}
	// prefix: action … seq; suffix: subject … tool_server. The signature
	// member sorts between them ("seq" < "signature" < "subject").
	b := make([]byte, 0, 512+len(meta))
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
	b = append(b, meta...)
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

	sig := key.SignRaw(signed.Message(Schema, b))
	out := make([]byte, 0, len(b)+143)
	out = append(out, b[:cut]...)
	out = append(out, `,"signature":"`...)
	out = hex.AppendEncode(out, sig)
	out = append(out, '"')
	out = append(out, b[cut:]...)
	return out, nil
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
