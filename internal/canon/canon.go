package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth bounds nesting of untrusted JSON before anything else parses it.
const MaxDepth = 64

// MaxNumberLen bounds a number literal. Shortest round-trip forms of
// doubles need at most 24 characters; the rest is room for harmless
// trailing zeros.
const MaxNumberLen = 100

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
	ErrInexact       = errors.New("number is not exactly the double it denotes; send it in its shortest form or as a string")
	ErrTrailingData  = errors.New("trailing data after JSON value")
)

// Check validates raw as one strict JSON value: no duplicate names (nor
// names differing only in letter case, see fold.go), valid UTF-8, depth ≤
// MaxDepth, every number a finite double and every integer literal within
// ±2^53.
func Check(raw []byte) error {
	folds, err := check(raw)
	if err != nil {
		return err
	}
	if folds {
		return checkFolding(raw)
	}
	return nil
}

// check is Check's single pass over the tokens. It reports whether some
// member name could fold together with another (see MayFold): only then
// does Check read the document a second time to compare names, so the
// common case (chio's own names are lower-case ASCII) compares none.
func check(raw []byte) (bool, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	first, folds := true, false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			if first {
				return false, fmt.Errorf("%w: empty input", ErrInvalid)
			}
			return folds, nil
		}
		if err != nil {
			return false, classify(err)
		}
		if !first && dec.StackDepth() == 0 && tok.Kind() != '}' && tok.Kind() != ']' {
			// jsontext accepts a stream of values; a signed object is one.
			return false, ErrTrailingData
		}
		first = false
		if dec.StackDepth() > MaxDepth {
			return false, ErrTooDeep
		}
		switch tok.Kind() {
		case '0':
			if err := checkNumber(tok.String()); err != nil {
				return false, err
			}
		case '"':
			if !folds && isName(dec) {
				folds = MayFold(tok.String())
			}
		}
		if dec.StackDepth() == 0 {
			// One complete top-level value read; anything but EOF is trailing.
			if _, err := dec.ReadToken(); err != io.EOF {
				if err == nil {
					return false, ErrTrailingData
				}
				return false, classify(err)
			}
			return folds, nil
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

// checkNumber enforces chio's number rule on a JSON number literal: the
// value it spells must be exactly the IEEE double it parses to, and an
// integral value must lie within ±2^53 — in every spelling. Otherwise the
// parameter hash (over the canonical form of the double) and the tool (if
// it read the original spelling) would see different numbers:
// 9007199254740993.0 and 9.007199254740993e15 both parse to
// 9007199254740992.
func checkNumber(lit string) error {
	if len(lit) > MaxNumberLen {
		return fmt.Errorf("%w: literal longer than %d characters", ErrNumberRange, MaxNumberLen)
	}
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
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("%w: %s", ErrNumberRange, lit)
	}
	if f == math.Trunc(f) && math.Abs(f) > maxSafeInt {
		return fmt.Errorf("%w: %s", ErrUnsafeInteger, lit)
	}
	// The shortest decimal that round-trips to f is what RFC 8785 writes;
	// the literal must denote that same decimal value (1.50 and 15e-1 do;
	// 0.1000000000000000055511151231257827 does not, though it parses to
	// the same double as 0.1).
	if decimalOf(lit) != decimalOf(strconv.FormatFloat(f, 'e', -1, 64)) {
		return fmt.Errorf("%w: %s", ErrInexact, lit)
	}
	return nil
}

// decimalOf normalizes a JSON number literal (or Go's 'e' format) to
// "sign digits exponent" with value = 0.digits × 10^exponent, digits
// without leading or trailing zeros; every spelling of zero is "0". It
// only shuffles characters: no big-number arithmetic an attacker could
// inflate with a long exponent.
func decimalOf(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, expPart, _ := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp := int64(len(intPart)) + parseExp(expPart)
	trimmed := strings.TrimLeft(digits, "0")
	exp -= int64(len(digits) - len(trimmed))
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return "0"
	}
	sign := "+"
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.FormatInt(exp, 10)
}

// parseExp reads an exponent, saturating far beyond any finite double's
// range (the caller has already checked the value is finite).
func parseExp(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	var n int64
	for _, c := range s {
		if n < 1e9 {
			n = n*10 + int64(c-'0')
		}
	}
	if neg {
		return -n
	}
	return n
}

// Canonicalize checks raw strictly and returns its RFC 8785 form.
func Canonicalize(raw []byte) ([]byte, error) {
	if err := Check(raw); err != nil {
		return nil, err
	}
	return format(raw)
}

// format is RFC 8785 serialization alone, without chio's stricter number
// rule (the RFC's own examples spell numbers inexactly on purpose); only
// tests call it directly, to check conformance with the RFC's vectors.
func format(raw []byte) ([]byte, error) {
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

// Hash-friendly helpers live with their callers; canon only shapes bytes.
