package canon

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

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
		// The v1 package's type error, or encoding/json's (json.Number
		// values are decoded by encoding/json itself).
		var te *jsonv1.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%w: %s", ErrInvalid, typeErrorText(te.Field, te.Type, te.Value))
		}
		var ste *json.UnmarshalTypeError
		if errors.As(err, &ste) {
			return fmt.Errorf("%w: %s", ErrInvalid, typeErrorText(ste.Field, ste.Type, ste.Value))
		}
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// typeErrorText says in JSON's terms which member has the wrong type and
// what it should be. encoding/json's own text names Go types ("Go struct
// field RespondRequest.reason of type string"): internal detail that
// reaches API clients, and no help to one that does not read Go.
func typeErrorText(field string, t reflect.Type, value string) string {
	where := ""
	if field != "" {
		where = strconv.Quote(field) + ": "
	}
	return where + "want " + jsonKind(t) + ", not " + value
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[json.Number]():
		return "a number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "a base64 string" // how encoding/json carries []byte
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}
