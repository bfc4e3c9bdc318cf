package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"math"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// VerifyStored is Verify, made cheap for the bytes chio itself stores (an
// audit of a million receipts is dominated by this function).
//
// Stored receipts are canonical JSON (they are exactly the bytes Sign
// returned). For canonical input:
//
//   - the signed message DOMAIN || 0x00 || JCS(object without "signature")
//     is the input with its top-level signature member cut out (a member
//     removed from a sorted, whitespace-free object leaves it so), which
//     spares Verify's re-canonicalization;
//   - canon.Check's rules reduce to checks on the decoded values: syntax,
//     duplicate names and UTF-8 are already enforced by the canonical-form
//     comparison and the decoder, and a canonical number is written as an
//     integer exactly when it is integral and below 1e21, so "no integer
//     literal beyond ±2^53" is a test on its float64 value;
//   - canon.Check's case-folding rule (no two member names of one object
//     equal under case folding) can only bite when a name holds an
//     upper-case ASCII letter or a non-ASCII character (see canon's fold.go):
//     the fast path declines any receipt whose metadata holds such a name,
//     and Verify decides it. The top-level and decision members are fixed
//     lower-case names that Decode matches exactly.
//
// The fast path only ever accepts: any input it does not handle, and every
// failure, is decided by Verify itself, so the accepted set and the errors
// are exactly Verify's (FuzzVerifyStored holds it to that).
func VerifyStored(raw []byte, kernelKey keys.PublicKey) (*Receipt, error) {
	if r := verifyCanonical(raw, kernelKey); r != nil {
		return r, nil
	}
	return Verify(raw, kernelKey)
}

// canonBufs recycles the scratch copy canonicalization needs.
var canonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func verifyCanonical(raw []byte, kernelKey keys.PublicKey) *Receipt {
	if kernelKey.IsZero() {
		return nil
	}
	buf := canonBufs.Get().(*[]byte)
	defer canonBufs.Put(buf)
	c := jsontext.Value(append((*buf)[:0], raw...))
	canonical := c.Canonicalize() == nil && bytes.Equal(c, raw)
	*buf = c[:0]
	if !canonical {
		return nil
	}
	r, err := Decode(raw)
	if err != nil || r.KernelKey != kernelKey.String() ||
		r.Seq > ijsonMax || r.Timestamp > ijsonMax || r.Timestamp < -ijsonMax || !ijson(r.Metadata, 2) {
		return nil
	}
	cutFrom, cutTo, sigHex, ok := signatureMember(raw)
	if !ok {
		return nil
	}
	var sig [ed25519.SignatureSize]byte
	for _, h := range sigHex {
		if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f') {
			return nil // not lowercase hex: let Verify say so
		}
	}
	if _, err := hex.Decode(sig[:], sigHex); err != nil {
		return nil
	}
	msg := append(append((*buf)[:0], Schema...), 0)
	msg = append(append(msg, raw[:cutFrom]...), raw[cutTo:]...)
	*buf = msg[:0]
	if !ed25519.Verify(kernelKey.Ed25519(), msg, sig[:]) {
		return nil
	}
	return r
}

// ijsonMax is canon.Check's integer bound, 2^53.
const ijsonMax = 1 << 53

// ijson applies canon.Check's depth and integer rules to a decoded value at
// nesting depth (the top-level object is depth 1, metadata depth 2), and
// declines (false) any object with a member name that may fold onto another:
// that rule is left to Verify.
func ijson(v any, depth int) bool {
	switch x := v.(type) {
	case map[string]any:
		if depth > canon.MaxDepth {
			return false
		}
		for k, e := range x {
			if canon.MayFold(k) || !ijson(e, depth+1) { // chio's own names never fold: the fast path stays fast
				return false
			}
		}
	case []any:
		if depth > canon.MaxDepth {
			return false
		}
		for _, e := range x {
			if !ijson(e, depth+1) {
				return false
			}
		}
	case float64:
		if a := math.Abs(x); a == math.Trunc(a) && a > ijsonMax { // canon.Check: integral values beyond 2^53 in any spelling
			return false
		}
	}
	return true
}

// signatureMember finds the top-level `"signature":"<128 hex>"` member of a
// canonical object and returns the byte range to cut (with one adjoining
// comma) and the hex digits. Nested objects may hold "signature" names too;
// only depth 1 counts. Input has passed canon.Check, so it is valid JSON.
func signatureMember(raw []byte) (cutFrom, cutTo int, sigHex []byte, ok bool) {
	const name = `"signature":"`
	const sigLen = 2 * ed25519.SignatureSize
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			// A member name at depth 1 starts right after '{' or ','.
			if depth == 1 && i > 0 && (raw[i-1] == '{' || raw[i-1] == ',') && bytes.HasPrefix(raw[i:], []byte(name)) {
				end := i + len(name) + sigLen + 1 // through the closing quote
				if end >= len(raw) || raw[end-1] != '"' || (raw[end] != ',' && raw[end] != '}') {
					return 0, 0, nil, false
				}
				sigHex = raw[i+len(name) : end-1]
				if raw[i-1] == ',' {
					return i - 1, end, sigHex, true
				}
				if raw[end] == ',' { // first member: take the comma after it
					return i, end + 1, sigHex, true
				}
				return i, end, sigHex, true
			}
			inStr = true
		}
	}
	return 0, 0, nil, false
}
