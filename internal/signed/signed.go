// Package signed implements SPEC §2's signature rule for every chio object:
// `signature` = Ed25519 over DOMAIN || 0x00 || JCS(object without "signature"),
// hex-encoded into the object's own "signature" member.
//
// Verification always works on the bytes received: the signature member is cut
// out of the received object and the rest canonicalized, so no Go struct is
// ever re-serialized and verified.
package signed

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// Sentinel errors.
var (
	ErrBadSignature     = errors.New("signature does not verify")
	ErrMissingSignature = errors.New("missing or malformed signature member")
	ErrWrongSchema      = errors.New("schema does not match signature domain")
	ErrNotObject        = errors.New("signed value is not a JSON object")
)

// Message builds the exact byte string that is signed.
func Message(domain string, canonical []byte) []byte {
	msg := make([]byte, 0, len(domain)+1+len(canonical))
	msg = append(msg, domain...)
	msg = append(msg, 0)
	return append(msg, canonical...)
}

// Sign canonicalizes obj (which must not carry a signature), signs it under
// domain, and returns the canonical object with its "signature" member: the
// bytes to store and send.
func Sign(key keys.PrivateKey, domain string, obj any) ([]byte, error) {
	payload, err := canon.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return SignCanonical(key, domain, payload)
}

// SignCanonical is Sign for an already canonical object.
func SignCanonical(key keys.PrivateKey, domain string, payload []byte) ([]byte, error) {
	ms, err := members(payload)
	if err != nil {
		return nil, err
	}
	insertAt := len(payload) - 1 // before the closing brace
	for _, m := range ms {
		if m.name == "signature" {
			return nil, fmt.Errorf("signed: object already has a signature member")
		}
		if m.name == "schema" && m.value != `"`+domain+`"` {
			return nil, fmt.Errorf("%w: %s vs %q", ErrWrongSchema, m.value, domain)
		}
	}
	// JCS sorts by UTF-16 code units; for the ASCII name "signature" that is
	// byte order, so splice before the first larger name.
	for _, m := range ms {
		if m.name > "signature" {
			insertAt = m.start
			break
		}
	}
	sig := hex.EncodeToString(key.SignRaw(Message(domain, payload)))
	member := `"signature":"` + sig + `"`
	var out bytes.Buffer
	out.Grow(len(payload) + len(member) + 1)
	out.Write(payload[:insertAt])
	switch {
	case len(ms) == 0:
		out.WriteString(member)
	case insertAt == len(payload)-1:
		out.WriteString("," + member)
	default:
		out.WriteString(member + ",")
	}
	out.Write(payload[insertAt:])
	return out.Bytes(), nil
}

// Verify checks that raw is an object signed by pub under domain.
func Verify(raw []byte, domain string, pub keys.PublicKey) error {
	msg, sig, err := Split(raw, domain)
	if err != nil {
		return err
	}
	if pub.IsZero() || !ed25519.Verify(pub.Ed25519(), msg, sig) {
		return ErrBadSignature
	}
	return nil
}

// Split returns the signed message and the signature bytes of a received
// object, after checking it strictly and checking its schema (if it has one)
// names domain.
func Split(raw []byte, domain string) (msg, sig []byte, err error) {
	if err := canon.Check(raw); err != nil {
		return nil, nil, err
	}
	ms, err := members(raw)
	if err != nil {
		return nil, nil, err
	}
	var rest bytes.Buffer
	rest.WriteByte('{')
	n := 0
	for _, m := range ms {
		switch m.name {
		case "signature":
			s := strings.Trim(m.value, `"`)
			if len(m.value) != 2*ed25519.SignatureSize+2 || strings.ToLower(s) != s {
				return nil, nil, ErrMissingSignature
			}
			if sig, err = hex.DecodeString(s); err != nil {
				return nil, nil, ErrMissingSignature
			}
			continue
		case "schema":
			if m.value != `"`+domain+`"` {
				return nil, nil, fmt.Errorf("%w: %s, want %q", ErrWrongSchema, m.value, domain)
			}
		}
		if n > 0 {
			rest.WriteByte(',')
		}
		rest.Write(raw[m.start:m.end])
		n++
	}
	rest.WriteByte('}')
	if sig == nil {
		return nil, nil, ErrMissingSignature
	}
	payload := jsontext.Value(rest.Bytes())
	if err := payload.Canonicalize(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", canon.ErrInvalid, err)
	}
	return Message(domain, payload), sig, nil
}

type member struct {
	name       string
	value      string // raw value text
	start, end int    // byte range of `"name":value` in the input
}

// members lists the top-level members of a JSON object with their offsets.
func members(raw []byte) ([]member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, ErrNotObject
	}
	var ms []member
	for dec.PeekKind() != '}' {
		before := dec.InputOffset()
		nameTok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", canon.ErrInvalid, err)
		}
		name := nameTok.String() // valid only until the next read
		val, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", canon.ErrInvalid, err)
		}
		start := int(before)
		// InputOffset before the name may sit on the preceding comma or space.
		for start < len(raw) && (raw[start] == ',' || raw[start] == ' ' || raw[start] == '\n' || raw[start] == '\t' || raw[start] == '\r') {
			start++
		}
		ms = append(ms, member{name: name, value: string(val), start: start, end: int(dec.InputOffset())})
	}
	if _, err := dec.ReadToken(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%w: %v", canon.ErrInvalid, err)
	}
	return ms, nil
}
