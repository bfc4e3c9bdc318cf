package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// v1Decode is what Unmarshal did before names had to match exactly:
// encoding/json with UseNumber and DisallowUnknownFields.
func v1Decode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

type inner struct {
	X int `json:"x"`
}

type Embedded struct {
	E string `json:"e"`
}

type everything struct {
	Embedded
	*inner    `json:"-"`
	S         string            `json:"s"`
	Opt       string            `json:"opt,omitempty"`
	Ptr       *int64            `json:"ptr,omitempty"`
	N         json.Number       `json:"n"`
	Raw       json.RawMessage   `json:"raw"`
	Any       any               `json:"any"`
	Meta      map[string]any    `json:"meta"`
	List      []any             `json:"list"`
	Nums      map[string]string `json:"nums"`
	Bytes     []byte            `json:"bytes"`
	When      time.Time         `json:"when"`
	Quoted    int               `json:"quoted,string"`
	Inner     inner             `json:"inner"`
	Inners    []inner           `json:"inners"`
	Untagged  bool
	Skipped   string `json:"-"`
	unhandled int
}

// Unmarshal keeps encoding/json's semantics for exact names: the fields
// callers use (embedded structs, omitempty, RawMessage, json.Number,
// numbers inside interfaces as json.Number, time, byte slices, the string
// option, untagged fields) decode identically.
func TestUnmarshalMatchesEncodingJSONOnExactNames(t *testing.T) {
	for _, in := range []string{
		`{"e":"emb","s":"x","opt":"o","ptr":-7,"n":12.5,"raw":{"b":[1,2],"a":"z"},"any":{"k":[1.5,2,{"m":-3}],"t":true,"z":null},` +
			`"meta":{"units":450,"currency":"USD","nested":{"v":1e2}},"list":[1,"a",null,[2]],"nums":{"a":"1"},"bytes":"aGk=",` +
			`"when":"2026-01-02T03:04:05.123456789Z","quoted":"42","inner":{"x":3},"inners":[{"x":1},{"x":2}],"Untagged":true}`,
		`{"any":7,"n":"3.25","meta":null,"list":[],"raw":null,"ptr":null}`,
		`{}`,
		`{"any":"s","inner":{},"inners":null}`,
	} {
		var want, got everything
		werr := v1Decode([]byte(in), &want)
		gerr := Unmarshal([]byte(in), &got)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: encoding/json %v, Unmarshal %v", in, werr, gerr)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s:\nencoding/json %#v\nUnmarshal     %#v", in, want, got)
		}
	}
	var m map[string]any
	if err := Unmarshal([]byte(`{"a":[1,{"b":2.5}]}`), &m); err != nil {
		t.Fatal(err)
	}
	if n := m["a"].([]any)[1].(map[string]any)["b"]; n != json.Number("2.5") {
		t.Fatalf("number in an interface decoded as %#v, want json.Number", n)
	}
	var top any
	if err := Unmarshal([]byte(`5`), &top); err != nil || top != json.Number("5") {
		t.Fatalf("top-level number: %#v %v", top, err)
	}
}

// A member name must be byte-identical to a field's JSON name: encoding/json
// would take "A", "UNITS" or "unitſ" (U+017F) for "a" and "units".
func TestUnmarshalMatchesNamesExactly(t *testing.T) {
	var v struct {
		A     int `json:"a"`
		Units int `json:"units"`
		Inner struct {
			Cost int `json:"cost"`
		} `json:"inner"`
		Untagged string
	}
	for _, in := range []string{
		`{"A":1}`,
		`{"UNITS":9000000}`,
		`{"unit\u017f":9000000}`,
		`{"inner":{"Cost":1}}`,
		`{"inner":{"co\u017ft":999999}}`,
		`{"untagged":"x"}`,
		`{"a":1,"b":2}`, // an exact-case unknown member
	} {
		if err := Unmarshal([]byte(in), &v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", in, err)
		}
	}
	if err := Unmarshal([]byte(`{"a":1,"units":2,"inner":{"cost":3},"Untagged":"u"}`), &v); err != nil ||
		v.A != 1 || v.Units != 2 || v.Inner.Cost != 3 || v.Untagged != "u" {
		t.Fatalf("exact names: %+v %v", v, err)
	}
}

// A tool's Go struct decoder would read {"cost":1,"coſt":999999} as 999999
// while the kernel's JSON pointer /cost reads 1: Check refuses the object,
// so neither reader ever sees it.
func TestUnmarshalRefusesCaseVariantMembers(t *testing.T) {
	var v struct {
		Cost int `json:"cost"`
	}
	for _, in := range []string{`{"cost":1,"co\u017ft":999999}`, `{"cost":1,"COST":999999}`} {
		if err := Unmarshal([]byte(in), &v); !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "cost") {
			t.Errorf("%s: got %v, want ErrDuplicateKey naming the members", in, err)
		}
	}
}

// A member of the wrong type is named in JSON's terms, never by Go type.
func TestUnmarshalTypeErrorNamesNoGoTypes(t *testing.T) {
	var v struct {
		S string      `json:"s"`
		N json.Number `json:"n"`
		B []byte      `json:"b"`
		L []struct {
			I int `json:"i"`
		} `json:"l"`
	}
	for in, want := range map[string]string{
		`[]`:                `want an object, not array`,
		`{"s":1}`:           `"s": want a string, not number`,
		`{"n":{}}`:          `want a number, not object`,
		`{"b":{}}`:          `"b": want a base64 string, not object`,
		`{"l":[{"i":"x"}]}`: `"l.0.i": want an integer, not string`,
	} {
		err := Unmarshal([]byte(in), &v)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want ErrInvalid saying %s", in, err, want)
		}
	}
}
