package canon

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// unmarshalOptions are encoding/json's semantics (jsonv1.DefaultOptionsV1:
// omitempty, embedded structs, RawMessage, merging, time formats, …) with
// two exceptions:
//
//   - MatchCaseInsensitiveNames(false): a member name matches a field only
//     if it is byte-identical to the field's JSON name. encoding/json
//     would also take "UNITS" or "unitſ" (U+017F) for "units", so a struct
//     and a map (CEL conditions, JSON pointers) would read different
//     members of the same object.
//   - RejectUnknownMembers(true), as Decoder.DisallowUnknownFields: a
//     misspelt (or differently cased) member is an error, never ignored.
//
// The unmarshalers keep UseNumber's behaviour, which the v1 package offers
// only on its Decoder: a number decoded into an interface is an
// encoding/json Number holding the literal, and a json.Number field takes
// its value exactly as encoding/json does (the experiment's v1 package has
// its own Number type, which callers do not know).
var unmarshalOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsonv2.RejectUnknownMembers(true),
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
		jsonv2.UnmarshalFromFunc(numberIntoAny),
		jsonv2.UnmarshalFromFunc(numberIntoNumber),
	)),
)

// numberIntoAny stores a JSON number decoded into an interface as
// json.Number; other values are left to the default decoding (which calls
// it again for the values nested in an object or array).
func numberIntoAny(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return errors.ErrUnsupported
	}
	lit, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*v = json.Number(lit)
	return nil
}

// numberIntoNumber decodes into a json.Number with encoding/json itself,
// on the value alone: a scalar has no member names to match.
func numberIntoNumber(dec *jsontext.Decoder, v *json.Number) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return json.Unmarshal(val, v)
}

// Unmarshal checks raw strictly (Check), then decodes it into v with
// encoding/json's semantics except that member names must match field
// names exactly and unknown members are refused (see unmarshalOptions).
func Unmarshal(raw []byte, v any) error {
	if err := Check(raw); err != nil {
		return err
	}
	if err := jsonv2.Unmarshal(raw, v, unmarshalOptions); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
