package receipt

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/signed"
)

func storedFixture(t testing.TB) []byte {
	t.Helper()
	r := fxReceipts()[3] // a chain receipt with metadata
	r.Metadata["nested"] = map[string]any{"signature": strings.Repeat("0", 128), "a": []any{"}", "{", `"signature":"`}}
	raw, err := Sign(fxKernel, r)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// VerifyStored must accept exactly what Verify accepts, and return the same
// receipt; the cases cover the fast path and every way off it.
func TestVerifyStoredMatchesVerify(t *testing.T) {
	raw := storedFixture(t)
	sig := raw[bytes.Index(raw, []byte(`"signature":"`))+13:]
	sig = sig[:128]
	variants := map[string][]byte{
		"canonical":            raw,
		"whitespace":           bytes.Replace(raw, []byte(`,"seq"`), []byte(`, "seq"`), 1),
		"reordered members":    append([]byte(`{"seq":4,`), bytes.Replace(raw[1:], []byte(`"seq":4,`), nil, 1)...),
		"flipped byte":         bytes.Replace(raw, []byte(`"issue_refund"`), []byte(`"issue_refunc"`), 1),
		"upper-case sig":       bytes.Replace(raw, sig, bytes.ToUpper(sig), 1),
		"nested signature cut": bytes.Replace(raw, []byte(`"signature":"`+strings.Repeat("0", 128)+`"`), []byte(`"x":1`), 1),
		"duplicate member":     bytes.Replace(raw, []byte(`{`), []byte(`{"seq":5,`), 1),
		"unknown member":       bytes.Replace(raw, []byte(`{`), []byte(`{"zzz":1,`), 1),
		"no signature":         bytes.Replace(raw, append(append([]byte(`,"signature":"`), sig...), '"'), nil, 1),
		"trailing data":        append(bytes.Clone(raw), []byte(` {}`)...),
	}
	for name, b := range variants {
		t.Run(name, func(t *testing.T) {
			want, werr := Verify(b, fxKernel.Public())
			got, gerr := VerifyStored(b, fxKernel.Public())
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("Verify: %v, VerifyStored: %v", werr, gerr)
			}
			if werr == nil && (got.ID != want.ID || got.Seq != want.Seq || !reflect.DeepEqual(got.Decision, want.Decision)) {
				t.Fatalf("different receipts: %+v vs %+v", got, want)
			}
		})
	}
	if _, err := VerifyStored(raw, fxOther.Public()); !errors.Is(err, signed.ErrBadSignature) {
		t.Fatalf("other key: %v", err)
	}
	if verifyCanonical(raw, fxKernel.Public()) == nil {
		t.Fatal("the fast path does not take stored bytes")
	}
}

// Signed by the kernel, canonical, and yet outside canon.Check's rules (or
// just inside them): the fast path must agree with Verify on each.
func TestVerifyStoredNumberAndDepthRules(t *testing.T) {
	base := storedFixture(t)
	msg, _, err := signed.Split(base, Schema)
	if err != nil {
		t.Fatal(err)
	}
	payload := msg[len(Schema)+1:]
	deep := strings.Repeat(`[`, 62) + strings.Repeat(`]`, 62)
	for name, value := range map[string]string{
		"2^53":            "9007199254740992",
		"2^53+2":          "9007199254740994",
		"-2^53-2":         "-9007199254740994",
		"1e20":            "100000000000000000000",
		"1e21":            "1e+21",
		"1e300":           "1e+300",
		"fraction":        "4503599627370495.5",
		"depth 64":        deep,
		"depth 65":        "[" + deep + "]",
		"big in an array": "[1,[2,18014398509481984]]",
	} {
		t.Run(name, func(t *testing.T) {
			p := bytes.Replace(payload, []byte(`"metadata":{`), []byte(`"metadata":{"aaa":`+value+`,`), 1)
			canonical, err := canonicalize(p)
			if err != nil {
				t.Skipf("not canonicalizable: %v", err)
			}
			raw, err := signed.SignCanonical(fxKernel, Schema, canonical)
			if err != nil {
				t.Fatal(err)
			}
			_, werr := Verify(raw, fxKernel.Public())
			_, gerr := VerifyStored(raw, fxKernel.Public())
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("Verify: %v, VerifyStored: %v", werr, gerr)
			}
			if fast := verifyCanonical(raw, fxKernel.Public()) != nil; fast != (werr == nil) {
				t.Fatalf("fast path accepted=%v, Verify: %v", fast, werr)
			}
		})
	}
}

func canonicalize(b []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(b))
	err := v.Canonicalize()
	return v, err
}

// FuzzVerifyStored: whatever the input, the fast path never accepts what
// Verify rejects.
func FuzzVerifyStored(f *testing.F) {
	raw := storedFixture(f)
	f.Add(raw)
	f.Add(bytes.Replace(raw, []byte(`"allow"`), []byte(`"deny"`), 1))
	f.Add([]byte(`{"signature":"` + strings.Repeat("a", 128) + `"}`))
	for _, c := range foldCases {
		f.Add(signedVariant(f, c.metadata))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := VerifyStored(b, fxKernel.Public())
		_, werr := Verify(b, fxKernel.Public())
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("VerifyStored %v (%v), Verify %v", gerr, got, werr)
		}
	})
}

func TestDecodeMatchesParse(t *testing.T) {
	raw := storedFixture(t)
	p, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != d.ID || p.Seq != d.Seq || p.Timestamp != d.Timestamp || p.Decision != d.Decision || len(p.Metadata) != len(d.Metadata) {
		t.Fatalf("%+v vs %+v", p, d)
	}
	for k, v := range p.Metadata {
		if k != "nested" && MetaString(v) != MetaString(d.Metadata[k]) {
			t.Errorf("metadata %s: %s vs %s", k, MetaString(v), MetaString(d.Metadata[k]))
		}
	}
	for _, bad := range [][]byte{[]byte(`{"schema":"x"}`), bytes.Replace(raw, []byte(`{`), []byte(`{"zzz":1,`), 1), []byte(`nope`)} {
		if _, err := Decode(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%.30s): %v", bad, err)
		}
	}
}

// foldCases are metadata members added to a signed, canonical receipt:
// canon.Check refuses an object with two names equal under case folding
// but not identical, and VerifyStored must refuse exactly what it does.
var foldCases = []struct {
	name, metadata string
	refused        bool
}{
	{"ascii case twin", `"Approver":"ed25519:evil",`, true},
	{"long s twin", `"zs":"x","zſ":"y",`, true},
	{"kelvin twin", `"k":1,"\u212a":2,`, true},
	{"twin in a nested object", `"aaa":{"Note":1,"note":2},`, true},
	{"twin in an array's object", `"aaa":[{"X":1,"x":2}],`, true},
	{"upper case without a twin", `"Zeta":1,`, false},
	{"non-ASCII without a twin", `"\u00e9t\u00e9":1,`, false},
}

// signedVariant inserts members at the start of the fixture's metadata,
// canonicalizes and signs the result with the kernel key.
func signedVariant(t testing.TB, members string) []byte {
	t.Helper()
	msg, _, err := signed.Split(storedFixture(t), Schema)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Replace(msg[len(Schema)+1:], []byte(`"metadata":{`), []byte(`"metadata":{`+members), 1)
	canonical, err := canonicalize(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signed.SignCanonical(fxKernel, Schema, canonical)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The fast path applies canon's case-folding rule: it never accepts a
// receipt whose metadata names differ only in case, which Verify refuses.
func TestVerifyStoredRefusesCaseVariantMetadataNames(t *testing.T) {
	for _, c := range foldCases {
		t.Run(c.name, func(t *testing.T) {
			raw := signedVariant(t, c.metadata)
			_, werr := Verify(raw, fxKernel.Public())
			_, gerr := VerifyStored(raw, fxKernel.Public())
			if (werr != nil) != c.refused {
				t.Fatalf("precondition: Verify refused=%v, want %v (%v)", werr != nil, c.refused, werr)
			}
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("Verify: %v, VerifyStored: %v\n%s", werr, gerr, raw)
			}
		})
	}
	// Reviewer's case: a twin inserted before a receipt's own "approver".
	r := &Receipt{ID: "rc-1", Seq: 1, Timestamp: 1_700_000_000_000, RequestID: "req-1",
		Decision: Decision{Verdict: Allow}, Metadata: map[string]any{"approver": "ed25519:aa"}}
	raw := caseTwinReceipt(t, r)
	if _, err := Verify(raw, fxKernel.Public()); err == nil {
		t.Fatal("precondition: Verify accepted case-variant metadata names")
	}
	if _, err := VerifyStored(raw, fxKernel.Public()); err == nil {
		t.Fatalf("VerifyStored accepted a receipt that Verify refuses:\n%s", raw)
	}
}

// caseTwinReceipt signs r with a member "Approver" added before its
// metadata's "approver": canonical ("A" sorts before "a") and signed by
// the kernel key.
func caseTwinReceipt(t testing.TB, r *Receipt) []byte {
	t.Helper()
	honest, err := Sign(fxKernel, r)
	if err != nil {
		t.Fatal(err)
	}
	msg, _, err := signed.Split(honest, Schema)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.TrimPrefix(msg, []byte(Schema+"\x00"))
	payload = bytes.Replace(payload, []byte(`"metadata":{"approver"`), []byte(`"metadata":{"Approver":"ed25519:evil","approver"`), 1)
	raw, err := signed.SignCanonical(fxKernel, Schema, payload)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The auditor's view: an export holding such a receipt does not verify.
func TestVerifyExportRefusesCaseVariantMetadataNames(t *testing.T) {
	r := &Receipt{ID: "rc-1", Seq: 1, Timestamp: 1_700_000_000_000, RequestID: "req-1",
		Decision: Decision{Verdict: Allow}, Metadata: map[string]any{"approver": "ed25519:aa"}}
	raw := caseTwinReceipt(t, r)
	var buf bytes.Buffer
	x := NewExportWriter(&buf, ExportHeader{KernelKey: fxKernel.Public().String(), Receipts: 1})
	x.Signed(raw)
	cp, _, err := SignCheckpoint(fxKernel, 1, LeafHash(raw), time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	x.Signed(cp)
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	rep := verifyBytes(t, buf.Bytes())
	if rep.OK() {
		t.Fatal("an export holding a receipt that receipt.Verify refuses was reported OK")
	}
	expectProblem(t, rep, 2, "differ only in letter case")
}
