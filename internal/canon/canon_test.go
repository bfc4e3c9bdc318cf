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
			got, err := Canonicalize(raw)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
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
		got, err := Canonicalize([]byte("[" + lit + "]"))
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
