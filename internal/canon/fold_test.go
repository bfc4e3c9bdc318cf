package canon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Two member names equal under Unicode simple case folding but not
// identical are refused by Check, Canonicalize and Decode alike, wherever
// the object is.
func TestCaseVariantMemberNamesRefused(t *testing.T) {
	var wide strings.Builder // more members than pairwiseMax: the map path
	for i := range 3 * pairwiseMax {
		fmt.Fprintf(&wide, `"m%d":%d,`, i, i)
	}
	for _, c := range []struct{ name, in, a, b string }{
		{"ascii", `{"a":1,"A":2}`, "a", "A"},
		{"long s", `{"units":100,"unit\u017f":9000000}`, "units", "unitſ"},
		{"long s raw", `{"units":100,"unitſ":9000000}`, "units", "unitſ"},
		{"kelvin sign", `{"k":1,"\u212a":2}`, "k", "\u212a"},
		{"kelvin vs upper", `{"K":1,"\u212a":2}`, "K", "\u212a"},
		{"escaped", `{"a":1,"\u0041":2}`, "a", "A"},
		{"mixed case", `{"Decision":"approved","decision":"denied"}`, "Decision", "decision"},
		{"greek sigma", `{"σ":1,"ς":2}`, "σ", "ς"},
		{"nested", `{"x":{"cost":1,"co\u017ft":999999}}`, "cost", "coſt"},
		{"array of objects", `[{"a":1},{"b":1,"B":2}]`, "b", "B"},
		{"deep in arrays", `{"l":[[{"z":[{"id":1,"ID":2}]}]]}`, "id", "ID"},
		{"wide object", `{` + wide.String() + `"units":1,"UNITS":2}`, "units", "UNITS"},
		{"wide object, early twin", `{"units":1,` + wide.String() + `"UNITS":2}`, "units", "UNITS"},
		{"wide nested", `{"o":{` + wide.String() + `"M7":2}}`, "m7", "M7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.in))
			if !errors.Is(err, ErrDuplicateKey) {
				t.Fatalf("Check: got %v, want ErrDuplicateKey", err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%+q", c.a)) || !strings.Contains(err.Error(), fmt.Sprintf("%+q", c.b)) {
				t.Errorf("error does not name both members %q and %q: %v", c.a, c.b, err)
			}
			if _, err := Canonicalize([]byte(c.in)); !errors.Is(err, ErrDuplicateKey) {
				t.Errorf("Canonicalize: got %v", err)
			}
			if _, err := Decode([]byte(c.in)); !errors.Is(err, ErrDuplicateKey) {
				t.Errorf("Decode: got %v", err)
			}
			var v any
			if err := Unmarshal([]byte(c.in), &v); !errors.Is(err, ErrDuplicateKey) {
				t.Errorf("Unmarshal: got %v", err)
			}
		})
	}
}

// Names that are distinct under folding pass, and folding is per object:
// "a" in one object and "A" in another are no collision.
func TestDistinctMemberNamesAccepted(t *testing.T) {
	var wide strings.Builder
	wide.WriteString(`{"A":0`)
	for i := range 3 * pairwiseMax {
		fmt.Fprintf(&wide, `,"m%d":%d`, i, i)
	}
	wide.WriteString(`}`)
	for _, in := range []string{
		`{"ab":1,"ba":2}`,
		`{"a":1,"b":{"A":2},"c":[{"A":3},{"a":4}]}`,
		`[{"a":1},{"A":2}]`,
		`{"e":1,"é":2,"ê":{"É":3}}`,
		`{"ss":1,"ß":2}`,      // full folding would equate them; simple folding does not
		`{"i":1,"ı":2,"İ":3}`, // dotless and dotted I fold to themselves only
		`{"Units":1,"currency":"USD"}`,
		`{"x-request-id":"a","X_Request_Id":"b"}`,
		wide.String(),
	} {
		if err := Check([]byte(in)); err != nil {
			t.Errorf("%s: Check: %v", in, err)
		}
		if _, err := Decode([]byte(in)); err != nil {
			t.Errorf("%s: Decode: %v", in, err)
		}
	}
}

// FoldKey puts two runes in the same class exactly when strings.EqualFold
// says they are equal: the key is the least rune of its folding orbit, so
// every rune's orbit shares one key and keys of distinct orbits differ.
func TestFoldKeyIsSimpleFolding(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		k := FoldKey(string(r))
		inOrbit := k == string(r)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if FoldKey(string(f)) != k {
				t.Fatalf("%U and %U fold together but have keys %q and %q", r, f, k, FoldKey(string(f)))
			}
			inOrbit = inOrbit || k == string(f)
		}
		if !inOrbit {
			t.Fatalf("key %q of %U is outside its orbit", k, r)
		}
	}
}

// Check refuses an object with two names exactly when strings.EqualFold
// equates them and they differ, whether the object is small or wide.
func FuzzCaseVariantNames(f *testing.F) {
	for _, s := range [][2]string{{"a", "A"}, {"units", "unitſ"}, {"k", "\u212a"}, {"ab", "ba"}, {"ss", "ß"}, {"σ", "ς"}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, a, b string, wide bool) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || a == b || strings.HasPrefix(a, "\x00") || strings.HasPrefix(b, "\x00") {
			return // (fillers start with NUL)
		}
		fill := map[string]int{}
		if wide {
			for i := range 2 * pairwiseMax {
				fill[fmt.Sprintf("\x00%d", i)] = i
			}
		}
		an, _ := json.Marshal(a)
		bn, _ := json.Marshal(b)
		fb, _ := json.Marshal(fill)
		raw := fmt.Sprintf(`{%s:1,%s%s:2}`, an, strings.Trim(string(fb), "{}")+",", bn)
		if !wide {
			raw = fmt.Sprintf(`{%s:1,%s:2}`, an, bn)
		}
		err := Check([]byte(raw))
		if strings.EqualFold(a, b) != errors.Is(err, ErrDuplicateKey) {
			t.Fatalf("%q vs %q (wide %v): EqualFold %v, Check %v", a, b, wide, strings.EqualFold(a, b), err)
		}
	})
}
