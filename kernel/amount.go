package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/policy"
)

// ErrAmount means a tool declares where its amount lives but the call's
// arguments do not hold a usable amount there. A call that meets it is
// denied: the kernel cannot know how much money it moves.
var ErrAmount = errors.New("no usable amount in the arguments")

// maxUnits is 2^53: amounts are hashed as canonical JSON, whose numbers
// must be exact IEEE doubles.
var maxUnits = big.NewInt(policy.MaxThresholdUnits)

// DeriveAmount reads the money a call moves from its arguments, at the
// JSON Pointers its tool declares (amount, currency). It returns nil, nil
// when the tool declares no amount (or t is nil: an undeclared tool). An
// error wraps ErrAmount when the pointers do not resolve, the amount is not
// a whole number of minor units in [0, 2^53] (in any JSON spelling: 450,
// 450.0 and 4.5e2 are the same amount), or the currency is not a short
// printable code (policy.CheckCurrency).
//
// It is a pure function of the tool and the bytes, so a summary, an
// amendment and the guards all derive the same amount from the same call.
func DeriveAmount(t *policy.Tool, args json.RawMessage) (*Amount, error) {
	if t == nil || t.Amount == "" {
		return nil, nil
	}
	doc, err := decodeArguments(args)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAmount, err)
	}
	return deriveAmount(t, doc)
}

// deriveAmount is DeriveAmount over already decoded arguments (numbers as
// json.Number, as decodeArguments leaves them).
func deriveAmount(t *policy.Tool, args map[string]any) (*Amount, error) {
	if t == nil || t.Amount == "" {
		return nil, nil
	}
	if t.Currency == "" {
		// policy validation requires both; a Tool built some other way
		// must not yield an amount in an unknown currency.
		return nil, fmt.Errorf("%w: tool %q declares an amount but no currency", ErrAmount, t.Name)
	}
	raw, err := resolvePointer(args, t.Amount)
	if err != nil {
		return nil, fmt.Errorf("%w: amount %s: %v", ErrAmount, t.Amount, err)
	}
	units, err := minorUnits(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: amount %s: %v", ErrAmount, t.Amount, err)
	}
	rawCur, err := resolvePointer(args, t.Currency)
	if err != nil {
		return nil, fmt.Errorf("%w: currency %s: %v", ErrAmount, t.Currency, err)
	}
	cur, ok := rawCur.(string)
	if !ok {
		return nil, fmt.Errorf("%w: currency %s must be a string like \"USD\", not %s", ErrAmount, t.Currency, jsonKind(rawCur))
	}
	if err := policy.CheckCurrency(cur); err != nil {
		return nil, fmt.Errorf("%w: currency %s %v", ErrAmount, t.Currency, err)
	}
	return &Amount{Units: units, Currency: cur}, nil
}

// minorUnits accepts a JSON number whose exact value is a whole number in
// [0, 2^53]. The literal is parsed exactly (math/big), never through a
// float: 9007199254740993.0 is not 2^53.
func minorUnits(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("must be a number of minor units (a whole number, like 450 for $4.50), not %s", jsonKind(v))
	}
	lit := string(n)
	switch {
	case len(lit) > maxAmountLiteral:
		return 0, fmt.Errorf("%.20s… is not a plausible amount", lit)
	case strings.HasPrefix(lit, "-"):
		return 0, fmt.Errorf("%s is negative", lit)
	}
	// ParseFloat first: it refuses overflow (1e999) before big.Rat would
	// compute a huge power of ten.
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return 0, fmt.Errorf("%s is out of range", lit)
	}
	r, ok := new(big.Rat).SetString(lit)
	switch {
	case !ok:
		return 0, fmt.Errorf("%s is not a number", lit)
	case !r.IsInt():
		return 0, fmt.Errorf("%s is not a whole number of minor units", lit)
	case r.Num().Cmp(maxUnits) > 0:
		return 0, fmt.Errorf("%s is more than 2^53 minor units", lit)
	}
	return r.Num().Int64(), nil
}

// resolvePointer finds the value an RFC 6901 JSON Pointer names.
func resolvePointer(doc any, ptr string) (any, error) {
	p := jsontext.Pointer(ptr)
	if ptr == "" || ptr[0] != '/' || !p.IsValid() {
		return nil, fmt.Errorf("%q is not a JSON Pointer into the arguments", ptr)
	}
	cur := doc
	for tok := range p.Tokens() {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, fmt.Errorf("the arguments have no %q", ptr)
			}
			cur = v
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(node) {
				return nil, fmt.Errorf("the arguments have no %q", ptr)
			}
			cur = node[i]
		default:
			return nil, fmt.Errorf("the arguments have no %q", ptr)
		}
	}
	return cur, nil
}

// arrayIndex parses an RFC 6901 array index: "0" or digits without a
// leading zero. ("-", the element after the last, never exists.)
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || tok[0] == '0' && len(tok) > 1 {
		return 0, false
	}
	i, err := strconv.Atoi(tok)
	return i, err == nil && i >= 0
}

// decodeArguments strictly decodes a call's arguments object (no
// duplicate keys, bounded depth and size), keeping numbers as json.Number
// so that amounts are read from their exact spelling.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	if len(raw) > MaxArgumentsBytes {
		return nil, fmt.Errorf("arguments larger than %d bytes", MaxArgumentsBytes)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	return m, nil
}

// decodeJSON checks raw with the canonical rules and decodes it in one
// pass, numbers as json.Number.
func decodeJSON(raw []byte) (any, error) { return canon.Decode(raw) }

// jsonKind names a decoded JSON value's type for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
