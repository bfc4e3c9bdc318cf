package canon

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestGoldenVectors(t *testing.T) {
	ins, err := filepath.Glob("testdata/jcs/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			raw, _ := os.ReadFile(in)
			want, err := os.ReadFile(strings.TrimSuffix(in, ".in.json") + ".out.json")
			if err != nil {
				t.Fatal(err)
			}
			// The RFC's examples spell some numbers inexactly on purpose
			// (333333333.33333329); chio's Check refuses those (see
			// TestInexactNumbersRefused), so the serializer is tested alone.
			got, err := format(raw)
			if err != nil {
				t.Fatalf("format: %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestRFC8785Numbers(t *testing.T) {
	data, err := os.ReadFile("testdata/jcs/numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		b, _ := hex.DecodeString(f[0])
		v := math.Float64frombits(binary.BigEndian.Uint64(b))
		// 'e' format keeps the literal out of the integer rule: these are doubles.
		lit := strconv.FormatFloat(v, 'e', -1, 64)
		got, err := format([]byte("[" + lit + "]"))
		if err != nil {
			t.Errorf("%s (%s): %v", f[0], lit, err)
			continue
		}
		if want := "[" + f[1] + "]"; string(got) != want {
			t.Errorf("%s: got %s want %s", f[0], got, want)
		}
		n++
	}
	if n != 24 {
		t.Fatalf("ran %d vectors, want 24", n)
	}
}

func TestStrictRejections(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	cases := []struct {
		name string
		in   string
		want error
	}{
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"nested duplicate key", `{"x":{"a":1,"b":2,"a":3}}`, ErrDuplicateKey},
		{"integer above 2^53", `{"n":9007199254740993}`, ErrUnsafeInteger},
		{"integer below -2^53", `[-9007199254740993]`, ErrUnsafeInteger},
		{"huge integer", `[123456789012345678901234567890]`, ErrUnsafeInteger},
		{"float overflow", `[1e400]`, ErrNumberRange},
		{"invalid utf8", "{\"a\":\"\xff\"}", ErrInvalid},
		{"trailing garbage", `{"a":1} x`, ErrInvalid},
		{"two values", `{"a":1}{"b":2}`, ErrTrailingData},
		{"empty", ``, ErrInvalid},
		{"too deep", deep, ErrTooDeep},
		{"unterminated", `{"a":`, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Canonicalize([]byte(c.in)); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// Issue 10 (3): a number must be exactly the double it denotes, and an
// integral value within ±2^53, whatever its spelling: otherwise the
// parameter hash binds one number and the tool reads another.
func TestInexactNumbersRefused(t *testing.T) {
	refused := []struct {
		in   string
		want error
	}{
		{`{"n":9007199254740993.0}`, ErrInexact},                   // 2^53+1 parses to 2^53: the hash and the tool would differ
		{`{"n":9.007199254740993e15}`, ErrInexact},                 // same value, exponent spelling
		{`{"n":9007199254740992.5}`, ErrInexact},                   // rounds to 2^53
		{`{"n":1e16}`, ErrUnsafeInteger},                           // exact double, but an integer beyond 2^53
		{`{"n":1.7976931348623157e308}`, ErrUnsafeInteger},         // largest double: integral
		{`{"n":-1e21}`, ErrUnsafeInteger},                          // negative side
		{`{"n":0.1000000000000000055511151231257827}`, ErrInexact}, // the double 0.1, spelt exactly, is not the decimal 0.1
		{`{"n":333333333.33333329}`, ErrInexact},                   // RFC 8785's own example
		{`{"n":1e-400}`, ErrInexact},                               // underflows to 0
		{`{"n":2e-324}`, ErrInexact},                               // rounds to 0
		{`{"n":1.000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001}`, ErrNumberRange}, // too long
	}
	for _, c := range refused {
		if _, err := Canonicalize([]byte(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.in, err, c.want)
		}
		if err := Check([]byte(c.in)); err == nil {
			t.Errorf("%s: Check accepted it", c.in)
		}
	}
	accepted := map[string]string{
		`[0.1]`:                     `[0.1]`,
		`[1.50]`:                    `[1.5]`,
		`[15e-1]`:                   `[1.5]`,
		`[1.0]`:                     `[1]`,
		`[9007199254740992.0]`:      `[9007199254740992]`,
		`[-9.007199254740992e15]`:   `[-9007199254740992]`,
		`[5e-324]`:                  `[5e-324]`,
		`[4.9406564584124654e-324]`: ``, // not the shortest decimal of 5e-324: refused below
		`[-0.0]`:                    `[0]`,
		`[0e99999999999]`:           `[0]`,
		`[333333333.3333333]`:       `[333333333.3333333]`,
		`[1e-7]`:                    `[1e-7]`,
		`[123.456e2]`:               `[12345.6]`,
	}
	for in, want := range accepted {
		got, err := Canonicalize([]byte(in))
		if want == "" {
			if !errors.Is(err, ErrInexact) {
				t.Errorf("%s: got %v, want ErrInexact", in, err)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("%s: got %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestBoundaryIntegersAccepted(t *testing.T) {
	for _, in := range []string{`[9007199254740992]`, `[-9007199254740992]`, `[0]`, `[-0]`} {
		if _, err := Canonicalize([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestUnmarshalRejectsUnknownFields(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := Unmarshal([]byte(`{"a":1,"b":2}`), &v); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v", err)
	}
	if err := Unmarshal([]byte(`{"a":1}`), &v); err != nil || v.A != 1 {
		t.Fatalf("got %v %v", err, v)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,"x",null,true]}`, `{"a":1,"a":2}`, `[1e400]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonicalize(raw)
		if err != nil {
			return
		}
		// Canonical form is a fixed point and itself strictly valid.
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical output rejected: %v\n%s", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent:\n%s\n%s", out, again)
		}
	})
}
