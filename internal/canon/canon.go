package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth bounds nesting of untrusted JSON before anything else parses it.
const MaxDepth = 64

// maxSafeInt is 2^53: the largest magnitude at which every integer is an
// exactly representable IEEE-754 double (RFC 8785 §3.2.2.3, I-JSON).
const maxSafeInt = 1 << 53

// Sentinel errors; callers branch with errors.Is.
var (
	ErrInvalid       = errors.New("invalid JSON")
	ErrDuplicateKey  = errors.New("duplicate object key")
	ErrUnsafeInteger = errors.New("integer outside ±2^53; send it as a string")
	ErrTooDeep       = errors.New("JSON nested too deeply")
	ErrNumberRange   = errors.New("number not representable as a double")
	ErrTrailingData  = errors.New("trailing data after JSON value")
)

// Check validates raw as one strict JSON value: no duplicate names, valid
// UTF-8, depth ≤ MaxDepth, every number a finite double and every integer
// literal within ±2^53.
func Check(raw []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	first := true
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			if first {
				return fmt.Errorf("%w: empty input", ErrInvalid)
			}
			return nil
		}
		if err != nil {
			return classify(err)
		}
		if !first && dec.StackDepth() == 0 && tok.Kind() != '}' && tok.Kind() != ']' {
			// jsontext accepts a stream of values; a signed object is one.
			return ErrTrailingData
		}
		first = false
		if dec.StackDepth() > MaxDepth {
			return ErrTooDeep
		}
		if tok.Kind() == '0' {
			if err := checkNumber(tok.String()); err != nil {
				return err
			}
		}
		if dec.StackDepth() == 0 {
			// One complete top-level value read; anything but EOF is trailing.
			if _, err := dec.ReadToken(); err != io.EOF {
				if err == nil {
					return ErrTrailingData
				}
				return classify(err)
			}
			return nil
		}
	}
}

func classify(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "duplicate object member name") || strings.Contains(msg, "duplicate name") {
		// jsontext reports duplicates as a syntactic error without a
		// sentinel; we translate once here so callers never match text.
		return fmt.Errorf("%w: %v", ErrDuplicateKey, err)
	}
	return fmt.Errorf("%w: %v", ErrInvalid, err)
}

// checkNumber enforces the I-JSON number rules on a JSON number literal.
func checkNumber(lit string) error {
	if !strings.ContainsAny(lit, ".eE") {
		digits := strings.TrimPrefix(lit, "-")
		if len(digits) > 16 { // 2^53 has 16 digits
			return fmt.Errorf("%w: %s", ErrUnsafeInteger, lit)
		}
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || n > maxSafeInt || n < -maxSafeInt {
			return fmt.Errorf("%w: %s", ErrUnsafeInteger, lit)
		}
		return nil
	}
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return fmt.Errorf("%w: %s", ErrNumberRange, lit)
	}
	return nil
}

// Canonicalize checks raw strictly and returns its RFC 8785 form.
func Canonicalize(raw []byte) ([]byte, error) {
	if err := Check(raw); err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return nil, classify(err)
	}
	return []byte(v), nil
}

// Marshal encodes v with encoding/json and returns the canonical form.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canon: marshal: %w", err)
	}
	return Canonicalize(raw)
}

// Unmarshal checks raw strictly, then decodes it into v, rejecting unknown
// fields so that a misspelt field is an error rather than silently ignored.
func Unmarshal(raw []byte, v any) error {
	if err := Check(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// Hash-friendly helpers live with their callers; canon only shapes bytes.
