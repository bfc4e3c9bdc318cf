package canon

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRefusesWhatCheckRefuses(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, c := range []struct {
		name, in string
		want     error
	}{
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"nested duplicate key", `{"x":{"a":1,"b":2,"a":3}}`, ErrDuplicateKey},
		{"integer above 2^53", `{"n":9007199254740993}`, ErrUnsafeInteger},
		{"float overflow", `[1e400]`, ErrNumberRange},
		{"invalid utf8", "{\"a\":\"\xff\"}", ErrInvalid},
		{"trailing garbage", `{"a":1} x`, ErrInvalid},
		{"two values", `{"a":1}{"b":2}`, ErrTrailingData},
		{"empty", ``, ErrInvalid},
		{"too deep", deep, ErrTooDeep},
		{"unterminated object", `{"a":`, ErrInvalid},
		{"unterminated array", `[1,`, ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Decode([]byte(c.in)); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestDecodeKeepsNumberLiterals(t *testing.T) {
	v, err := Decode([]byte(`{"a":[4.5e2,-0,9007199254740992,"s",true,null,{}],"b":{"c":1.0}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	a := m["a"].([]any)
	if a[0] != json.Number("4.5e2") || a[1] != json.Number("-0") || a[2] != json.Number("9007199254740992") ||
		a[3] != "s" || a[4] != true || a[5] != nil || len(a[6].(map[string]any)) != 0 {
		t.Fatalf("decoded %#v", a)
	}
	if m["b"].(map[string]any)["c"] != json.Number("1.0") {
		t.Fatalf("decoded %#v", m["b"])
	}
	if l, err := Decode([]byte(`[]`)); err != nil || len(l.([]any)) != 0 {
		t.Fatalf("empty list: %#v %v", l, err)
	}
	if s, err := Decode([]byte(` "x" `)); err != nil || s != "x" {
		t.Fatalf("scalar: %#v %v", s, err)
	}
	if _, err := Decode([]byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))); err != nil {
		t.Fatalf("MaxDepth levels refused: %v", err)
	}
}

// FuzzDecode: Decode accepts exactly what Check accepts, and what it
// returns is the same JSON value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,"x",null,true]}`, `{"a":1,"a":2}`, `[1e400]`, "\"\xff\"", `[[[]]]`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := Decode(raw)
		if cerr := Check(raw); (err == nil) != (cerr == nil) {
			t.Fatalf("Decode: %v, Check: %v", err, cerr)
		}
		if err != nil {
			return
		}
		back, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Canonicalize(raw)
		got, err := Canonicalize(back)
		if err != nil || string(got) != string(want) {
			t.Fatalf("decoded value differs: %s vs %s (%v)", got, want, err)
		}
	})
}
