package vectors

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/sdk/toolserver"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors from the Go implementation")

const dir = "../../testdata/vectors"

// Fixed seeds: Ed25519 signing is deterministic, so every signature below
// is a constant that the other SDKs must reproduce.
var testKeys = []struct{ name, seedHex string }{
	{"agent", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"},
	{"approver", "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"},
}

func key(t *testing.T, name string) keys.PrivateKey {
	t.Helper()
	for _, k := range testKeys {
		if k.name == name {
			seed, _ := hex.DecodeString(k.seedHex)
			return keys.FromSeed(seed)
		}
	}
	t.Fatalf("no test key %q", name)
	return keys.PrivateKey{}
}

// check compares the regenerated vectors with the committed file, or
// rewrites it under -update.
func check(t *testing.T, file string, v any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./internal/vectors -update)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s differs from what the Go implementation produces now; if the change is intended, run go test ./internal/vectors -update and review the diff", path)
	}
}

type header struct {
	Description string `json:"description"`
}

// --- keys ---

type keyVector struct {
	Name      string `json:"name"`
	SeedHex   string `json:"seed_hex"`
	PKCS8PEM  string `json:"pkcs8_pem"`
	PublicKey string `json:"public_key"`
}

func TestKeys(t *testing.T) {
	out := struct {
		header
		Keys []keyVector `json:"keys"`
	}{header: header{"Ed25519 test keys: seed, the PKCS#8 PEM file chio keygen would write, and the public key's text form. Other vector files name these keys."}}
	for _, k := range testKeys {
		pk := key(t, k.name)
		pem, err := pk.MarshalPKCS8PEM()
		if err != nil {
			t.Fatal(err)
		}
		out.Keys = append(out.Keys, keyVector{k.name, k.seedHex, string(pem), pk.Public().String()})
	}
	check(t, "keys.json", out)
}

// --- canonical JSON ---

// Refusal reasons, shared with the SDKs' error reasons.
const (
	refInvalid      = "invalid"        // not JSON, invalid UTF-8, lone surrogate, trailing data
	refDuplicateKey = "duplicate_key"  // two members with the same (decoded) name
	refUnsafeNumber = "unsafe_number"  // an integral value beyond ±2^53, in any spelling
	refInexact      = "inexact_number" // the literal is not exactly the double it parses to (its shortest decimal)
	refNumberRange  = "number_range"   // not a finite double at all, or a literal longer than 100 characters
	refTooDeep      = "too_deep"       // nested deeper than 64
)

// goSentinels: the Go errors that each refusal reason maps to.
var goSentinels = map[string][]error{
	refInvalid:      {canon.ErrInvalid, canon.ErrTrailingData},
	refDuplicateKey: {canon.ErrDuplicateKey},
	refUnsafeNumber: {canon.ErrUnsafeInteger},
	refNumberRange:  {canon.ErrNumberRange},
	refTooDeep:      {canon.ErrTooDeep},
	refInexact:      {canon.ErrInexact},
}

type canonCase struct {
	name    string
	input   string // JSON text; used when hexIn is empty
	hexIn   string // raw bytes, for inputs that are not valid UTF-8
	refused string // expected refusal reason; "" = accepted
}

type canonVector struct {
	Name     string `json:"name"`
	Input    string `json:"input,omitempty"`
	InputHex string `json:"input_hex,omitempty"`
	Output   string `json:"output,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

var canonCases = []canonCase{
	// Strings: RFC 8785 escapes only '"', '\\' and C0 controls (with the short
	// forms \b \f \n \r \t); everything else, U+2028 and DEL included, is
	// written as UTF-8.
	{name: "string escapes", input: `["\"", "\\", "\/", "/", "\b\f\n\r\t", "\u0000\u0001\u001f", "\u007f", "\u0080"]`},
	{name: "line and paragraph separators", input: `["\u2028", "\u2029", "a\u2028b"]`},
	{name: "non-ASCII verbatim", input: `["\u00e9", "é", "\u20ac", "\ufeff", "\uffff", "\ud83d\ude00", "😀"]`},
	{name: "HTML characters verbatim", input: `["<script>&amp;</script>", "\u003c\u003e\u0026"]`},
	{name: "lone high surrogate", input: `["\ud800"]`, refused: refInvalid},
	{name: "lone low surrogate", input: `["\udfff"]`, refused: refInvalid},
	{name: "reversed surrogate pair", input: `["\ude00\ud83d"]`, refused: refInvalid},
	{name: "high surrogate then text", input: `["\ud83dx"]`, refused: refInvalid},
	{name: "lone surrogate in a key", input: `{"\udc00":1}`, refused: refInvalid},
	{name: "raw control character in a string", input: "[\"a\x01b\"]", refused: refInvalid},
	{name: "raw newline in a string", input: "[\"a\nb\"]", refused: refInvalid},
	{name: "invalid UTF-8 byte", hexIn: "5b22ff225d", refused: refInvalid},
	{name: "overlong UTF-8", hexIn: "5b22c0af225d", refused: refInvalid},
	{name: "UTF-8 encoded surrogate", hexIn: "5b22eda080225d", refused: refInvalid},
	{name: "truncated UTF-8", hexIn: "5b22e282225d", refused: refInvalid},
	{name: "bad escape", input: `["\x41"]`, refused: refInvalid},
	{name: "short unicode escape", input: `["\u12"]`, refused: refInvalid},

	// Objects: members sorted by UTF-16 code units (U+1F600 is D83D DE00, so
	// it sorts before U+FF00), duplicates refused even when spelled apart.
	{name: "key order by UTF-16 code units", input: `{"\uff00":1,"\ud83d\ude00":2,"a":3,"Z":4,"":5,"aa":6,"\u00e9":7,"b":8,"\u0080":9}`},
	{name: "nested objects sorted", input: `{"b":{"z":[1,2.0,-0.0,1e2],"a":"x"},"a":[]}`},
	{name: "empty containers", input: `{"o":{},"a":[],"n":[[]]}`},
	{name: "literals", input: `[true,false,null]`},
	{name: "insignificant whitespace", input: " \t\n\r{ \"b\" : [ 1 , 2 ] ,\n\"a\" : null } \n"},
	{name: "duplicate key", input: `{"a":1,"a":2}`, refused: refDuplicateKey},
	{name: "duplicate key spelled apart", input: `{"a":1,"\u0061":2}`, refused: refDuplicateKey},
	{name: "nested duplicate key", input: `{"x":{"a":1,"b":2,"a":3}}`, refused: refDuplicateKey},

	// Member names equal under Unicode simple case folding (strings.EqualFold)
	// but not identical: a case-insensitive decoder reads them as one field,
	// a map as two, so one signed object could mean two things. Folding is
	// per object and simple: "ß" is not "ss".
	{name: "names differing in ASCII case", input: `{"a":1,"A":2}`, refused: refDuplicateKey},
	{name: "names differing in case, mixed", input: `{"Decision":"approved","decision":"denied"}`, refused: refDuplicateKey},
	{name: "upper-case twin escaped", input: `{"a":1,"\u0041":2}`, refused: refDuplicateKey},
	{name: "long s folds with s", input: `{"units":100,"unit\u017f":9000000}`, refused: refDuplicateKey},
	{name: "long s folds with S", input: `{"UNITS":100,"unitſ":9000000}`, refused: refDuplicateKey},
	{name: "Kelvin sign folds with k", input: `{"k":1,"\u212a":2}`, refused: refDuplicateKey},
	{name: "Kelvin sign folds with K", input: `{"\u212a":1,"K":2}`, refused: refDuplicateKey},
	{name: "final sigma folds with sigma", input: `{"σ":1,"ς":2}`, refused: refDuplicateKey},
	{name: "capital sigma folds with final sigma", input: `{"\u03a3":1,"\u03c2":2}`, refused: refDuplicateKey},
	{name: "sharp s folds with capital sharp s", input: `{"ß":1,"\u1e9e":2}`, refused: refDuplicateKey},
	{name: "case twins in a nested object", input: `{"x":{"cost":1,"co\u017ft":999999}}`, refused: refDuplicateKey},
	{name: "case twins in an object inside an array", input: `{"l":[{"a":1},[{"id":1,"ID":2}]]}`, refused: refDuplicateKey},
	{name: "case twins beyond the BMP (Deseret)", input: `{"\ud801\udc00":1,"\ud801\udc28":2}`, refused: refDuplicateKey},
	{name: "other refusals come before case twins", input: `{"a":1,"A":2,"s":"\ud800"}`, refused: refInvalid},
	{name: "anagram names", input: `{"ab":1,"ba":2}`},
	{name: "sharp s is not ss under simple folding", input: `{"ss":1,"ß":2,"x":{"SS":3,"\u1e9e":4}}`},
	{name: "case variants in different objects", input: `{"a":1,"b":{"A":2},"c":[{"A":3},{"a":4}]}`},
	{name: "dotless and dotted i fold to themselves", input: `{"i":1,"ı":2,"İ":3}`},
	{name: "case variants in sibling objects of an array", input: `[{"k":1},{"K":2},{"\u212a":3}]`},
	{name: "depth 64", input: nest(64)},
	{name: "depth 65", input: nest(65), refused: refTooDeep},

	// Numbers spelled exactly as a double (the decimal value of its shortest
	// form), integral ones within ±2^53: written in ECMAScript's shortest form.
	{name: "zeros", input: `[0, -0, 0.0, -0.0, 0e10, -0E-3, 0e99999999999]`},
	{name: "integers in other spellings", input: `[1.0, 1e0, 1E+2, 100e-2, 12.5e1]`},
	{name: "fractions", input: `[0.1, 0.2, 0.30000000000000004, 4.50, 1.50, 15e-1, 2e-3, 333333333.3333333, 123.456e2]`},
	{name: "small exponents", input: `[1e-6, 1e-7, 0.0000001, 123e-9, 1.5e-10, -2.5E-8]`},
	{name: "subnormals", input: `[5e-324, -5e-324, 2.2250738585072014e-308]`},
	{name: "2^53 and neighbours", input: `[9007199254740991, 9007199254740992, -9007199254740992, -9007199254740991]`},
	{name: "2^53 in other spellings", input: `[9007199254740992.0, 9.007199254740992e15, 90071992547409920e-1]`},
	{name: "large fraction below 2^53", input: `[999999999999999.9, 4503599627370495.5]`},

	// Numbers that are not: the hash would bind one number and a tool that
	// read the spelling another.
	{name: "2^53+1", input: `[9007199254740993]`, refused: refUnsafeNumber},
	{name: "-(2^53+1)", input: `[-9007199254740993]`, refused: refUnsafeNumber},
	{name: "2^53+2 (a double, but beyond 2^53)", input: `[9007199254740994]`, refused: refUnsafeNumber},
	{name: "2^53+1 spelled with a fraction", input: `[9007199254740993.0]`, refused: refInexact},
	{name: "2^53+1 spelled with exponent", input: `[9.007199254740993e15]`, refused: refInexact},
	{name: "2^53 plus a half", input: `[9007199254740992.5]`, refused: refInexact},
	{name: "1e16 spelled as exponent", input: `[1e16]`, refused: refUnsafeNumber},
	{name: "1e21", input: `[1e21]`, refused: refUnsafeNumber},
	{name: "-1e21", input: `{"n":-1e21}`, refused: refUnsafeNumber},
	{name: "largest double", input: `[1.7976931348623157e308]`, refused: refUnsafeNumber},
	{name: "2^64", input: `[18446744073709551616]`, refused: refUnsafeNumber},
	{name: "30 digits", input: `[123456789012345678901234567890]`, refused: refUnsafeNumber},
	{name: "the double 0.1 spelled exactly", input: `[0.1000000000000000055511151231257827]`, refused: refInexact},
	{name: "RFC 8785's inexact example", input: `[333333333.33333329]`, refused: refInexact},
	{name: "underflow to zero", input: `[1e-400]`, refused: refInexact},
	{name: "rounds to zero", input: `[2e-324]`, refused: refInexact},
	{name: "not the shortest spelling of 5e-324", input: `[4.9406564584124654e-324]`, refused: refInexact},
	// Exponents beyond any decimal library's range: the rule only moves
	// characters, so these are judged like 0e10 and 1e-400.
	{name: "zero with an exponent beyond 10^18", input: `[0e99999999999999999999, -0.0E-99999999999999999999]`},
	{name: "underflow with an exponent beyond 10^18", input: `[1e-99999999999999999999]`, refused: refInexact},
	{name: "number literal of 101 characters", input: "[1." + strings.Repeat("0", 98) + "1]", refused: refNumberRange},
	{name: "overflow", input: `[1e400]`, refused: refNumberRange},
	{name: "negative overflow", input: `[-1e400]`, refused: refNumberRange},

	// Not JSON.
	{name: "NaN", input: `[NaN]`, refused: refInvalid},
	{name: "Infinity", input: `[Infinity]`, refused: refInvalid},
	{name: "negative Infinity", input: `[-Infinity]`, refused: refInvalid},
	{name: "leading zero", input: `[01]`, refused: refInvalid},
	{name: "plus sign", input: `[+1]`, refused: refInvalid},
	{name: "bare fraction", input: `[.5]`, refused: refInvalid},
	{name: "trailing dot", input: `[1.]`, refused: refInvalid},
	{name: "empty exponent", input: `[1e]`, refused: refInvalid},
	{name: "hex number", input: `[0x10]`, refused: refInvalid},
	{name: "trailing comma", input: `[1,]`, refused: refInvalid},
	{name: "single quotes", input: `{'a':1}`, refused: refInvalid},
	{name: "comment", input: `{"a":1 /* c */}`, refused: refInvalid},
	{name: "trailing garbage", input: `{"a":1} x`, refused: refInvalid},
	{name: "two values", input: `{"a":1}{"b":2}`, refused: refInvalid},
	{name: "empty input", input: ``, refused: refInvalid},
	{name: "byte order mark", input: "\ufeff{}", refused: refInvalid},
	{name: "unterminated", input: `{"a":`, refused: refInvalid},
}

func TestCanonical(t *testing.T) {
	out := struct {
		header
		Cases []canonVector `json:"cases"`
	}{header: header{"RFC 8785 canonical form of JSON text under chio's strict rules. input (or input_hex, for bytes that are not UTF-8) is the JSON text; output is the canonical text, or refused names why the input is refused."}}
	for _, c := range canonCases {
		in := []byte(c.input)
		if c.hexIn != "" {
			var err error
			if in, err = hex.DecodeString(c.hexIn); err != nil {
				t.Fatal(err)
			}
		}
		got, err := canon.Canonicalize(in)
		v := canonVector{Name: c.name, Input: c.input, InputHex: c.hexIn, Refused: c.refused}
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: Go refuses %q: %v", c.name, in, err)
		case c.refused == "":
			v.Output = string(got)
		case err == nil:
			t.Errorf("%s: Go accepts %q as %s; want refused (%s)", c.name, in, got, c.refused)
		case !isAny(err, goSentinels[c.refused]):
			t.Errorf("%s: Go refuses %q with %v; want %s", c.name, in, err, c.refused)
		}
		out.Cases = append(out.Cases, v)
	}
	check(t, "canonical.json", out)
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// --- parameter hashes ---

type hashVector struct {
	Name           string  `json:"name"`
	Server         string  `json:"server"`
	Tool           string  `json:"tool"`
	Arguments      string  `json:"arguments"`       // JSON text
	GovernedIntent *string `json:"governed_intent"` // JSON text, or null when absent
	Canonical      string  `json:"canonical"`       // the hashed bytes
	ParameterHash  string  `json:"parameter_hash"`
}

func strp(s string) *string { return &s }

var sketchArgs = `{"customer_id": "cust-9012", "amount": 450, "currency": "USD"}`
var sketchIntent = `{"purpose": "Customer requested refund for order #8834", "max_amount": {"units": 450, "currency": "USD"}}`

var hashCases = []hashVector{
	{Name: "the seed's refund", Server: "payment-server", Tool: "issue_refund", Arguments: sketchArgs, GovernedIntent: strp(sketchIntent)},
	{Name: "no intent", Server: "demo", Tool: "echo", Arguments: `{"text":"hi"}`},
	{Name: "empty arguments", Server: "demo", Tool: "echo", Arguments: `{}`},
	{Name: "hostile arguments", Server: "demo", Tool: "echo",
		Arguments: `{"note":"\u2028<script>&\u0000\"\\","z":[1.0,-0,1e-7,5e-324,9007199254740992],"\u00e9":{"b":true,"a":null},"\ud83d\ude00":"x","\uff00":[]}`},
	{Name: "full intent", Server: "payment-server", Tool: "issue_refund", Arguments: `{"amount":199,"currency":"EUR","customer_id":"c-1"}`,
		GovernedIntent: strp(`{"purpose":"Erstattung für Bestellung #1","max_amount":{"units":199,"currency":"EUR"},"action_category":"financial","context":{"ticket":"T-1","tags":["a","b"]}}`)},
	{Name: "non-ASCII server and tool names", Server: "sérveur", Tool: "outil\u2028", Arguments: `{"k":"v"}`},
}

func TestParameterHash(t *testing.T) {
	out := struct {
		header
		Cases []hashVector `json:"cases"`
	}{header: header{"parameter_hash = SHA-256 hex of JCS({server_id, tool_name, arguments, governed_intent}), governed_intent null when absent (SPEC §2). canonical is the hashed text."}}
	for _, c := range hashCases {
		var intent json.RawMessage
		if c.GovernedIntent != nil {
			intent = json.RawMessage(*c.GovernedIntent)
		}
		h, err := kernel.ParameterHash(c.Server, c.Tool, json.RawMessage(c.Arguments), intent)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		in := "null"
		if c.GovernedIntent != nil {
			in = *c.GovernedIntent
		}
		pre, err := canon.Canonicalize([]byte(`{"server_id":` + quote(t, c.Server) + `,"tool_name":` + quote(t, c.Tool) +
			`,"arguments":` + c.Arguments + `,"governed_intent":` + in + `}`))
		if err != nil {
			t.Fatal(err)
		}
		c.Canonical, c.ParameterHash = string(pre), h
		out.Cases = append(out.Cases, c)
	}
	for _, c := range out.Cases {
		if sha := sha256Hex(c.Canonical); sha != c.ParameterHash {
			t.Errorf("%s: canonical text hashes to %s, kernel says %s", c.Name, sha, c.ParameterHash)
		}
	}
	check(t, "parameter_hash.json", out)
}

// sketchHash is the parameter hash of the seed's refund call.
func sketchHash(t *testing.T) string {
	h, err := kernel.ParameterHash("payment-server", "issue_refund", json.RawMessage(sketchArgs), json.RawMessage(sketchIntent))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func quote(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --- call proofs ---

type proofVector struct {
	Name          string `json:"name"`
	Key           string `json:"key"`
	RequestID     string `json:"request_id"`
	CapabilityID  string `json:"capability_id"`
	Server        string `json:"server"`
	Tool          string `json:"tool"`
	ParameterHash string `json:"parameter_hash"`
	IssuedAt      int64  `json:"issued_at"`
	Signed        string `json:"signed"` // the canonical payload after the domain and 0x00
	Signature     string `json:"signature"`
}

func TestCallProof(t *testing.T) {
	out := struct {
		header
		Cases []proofVector `json:"cases"`
	}{header: header{"Call proofs: signature = Ed25519(key, \"chio.call.v1\" || 0x00 || signed), signed = JCS({request_id, capability_id, server, tool, parameter_hash, issued_at}). The call's proof member is {issued_at, signature}."}}
	ph := sketchHash(t)
	cases := []proofVector{
		{Name: "plain", RequestID: "req-0190f0e0-0000-7000-8000-000000000001", CapabilityID: "cap-0190f0e0-0000-7000-8000-000000000002", Server: "payment-server", Tool: "issue_refund", IssuedAt: 1_800_000_000},
		{Name: "caller's request id with quotes and a separator", RequestID: "run-42:\"step\"\u2028é", CapabilityID: "cap-1", Server: "demo", Tool: "echo", IssuedAt: 1_700_000_123},
		{Name: "non-ASCII names", RequestID: "req-😀", CapabilityID: "cap-\\", Server: "sérveur", Tool: "outil", IssuedAt: 0},
	}
	k := key(t, "agent")
	for _, c := range cases {
		c.Key, c.ParameterHash = "agent", ph
		p, err := kernel.SignProof(k, c.RequestID, c.CapabilityID, c.Server, c.Tool, c.ParameterHash, time.Unix(c.IssuedAt, 0))
		if err != nil {
			t.Fatal(err)
		}
		pre, err := canon.Marshal(map[string]any{"request_id": c.RequestID, "capability_id": c.CapabilityID, "server": c.Server,
			"tool": c.Tool, "parameter_hash": c.ParameterHash, "issued_at": c.IssuedAt})
		if err != nil {
			t.Fatal(err)
		}
		if err := kernel.VerifyProof(k.Public(), p, c.RequestID, c.CapabilityID, c.Server, c.Tool, c.ParameterHash, time.Unix(c.IssuedAt, 0)); err != nil {
			t.Fatalf("%s: kernel refuses its own proof: %v", c.Name, err)
		}
		sig, _ := hex.DecodeString(p.Signature)
		if !ed25519.Verify(k.Public().Ed25519(), signed.Message(kernel.CallProofSchema, pre), sig) {
			t.Fatalf("%s: signature is not over the generic canonical form", c.Name)
		}
		c.Signed, c.Signature = string(pre), p.Signature
		out.Cases = append(out.Cases, c)
	}
	check(t, "call_proof.json", out)
}

// --- Chio-Proof status headers ---

type statusVector struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	ID       string `json:"id"`
	IssuedAt int64  `json:"issued_at"`
	Signed   string `json:"signed"` // JCS({request_id, issued_at})
	Header   string `json:"header"` // <issued_at>.<signature hex>
}

func TestStatusProof(t *testing.T) {
	out := struct {
		header
		Cases []statusVector `json:"cases"`
	}{header: header{"Chio-Proof header for GET /v1/calls/{id} and GET /approvals/{id}: <issued_at>.<hex Ed25519(key, \"chio.call-status.v1\" || 0x00 || signed)>, signed = JCS({request_id: id, issued_at})."}}
	k := key(t, "agent")
	cases := []statusVector{
		{Name: "request id", ID: "req-1", IssuedAt: 1_800_000_000},
		{Name: "approval id", ID: "ar-0190f0e0-0000-7000-8000-000000000000", IssuedAt: 1_800_000_000},
		{Name: "odd id", ID: "odd \"quoted\" id\u2028é", IssuedAt: 1_700_000_001},
	}
	for _, c := range cases {
		c.Key = "agent"
		pre, err := canon.Marshal(map[string]any{"request_id": c.ID, "issued_at": c.IssuedAt})
		if err != nil {
			t.Fatal(err)
		}
		sig := k.SignRaw(signed.Message("chio.call-status.v1", pre))
		c.Signed = string(pre)
		c.Header = strings.Join([]string{itoa(c.IssuedAt), hex.EncodeToString(sig)}, ".")
		// The server's verifier is the authority on the format.
		if err := httpapi.VerifyStatusProof(c.Header, k.Public(), c.ID, time.Unix(c.IssuedAt, 0)); err != nil {
			t.Fatalf("%s: chiod refuses the header: %v", c.Name, err)
		}
		out.Cases = append(out.Cases, c)
	}
	check(t, "status_proof.json", out)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// --- Chio-Proof cancel headers ---

type cancelVector struct {
	Name       string `json:"name"`
	Key        string `json:"key"`
	ApprovalID string `json:"approval_id"`
	Reason     string `json:"reason"` // as sent in the body, untrimmed
	IssuedAt   int64  `json:"issued_at"`
	Signed     string `json:"signed"` // JCS({approval_id, issued_at, reason})
	Header     string `json:"header"` // <issued_at>.<signature hex>
}

func TestCancelProof(t *testing.T) {
	out := struct {
		header
		Cases []cancelVector `json:"cases"`
	}{header: header{"Chio-Proof header by which an agent cancels its own parked call (POST /approvals/{id}/cancel, body {\"reason\"}): <issued_at>.<hex Ed25519(key, \"chio.cancel.v1\" || 0x00 || signed)>, signed = JCS({approval_id, issued_at, reason}), reason exactly as sent."}}
	k := key(t, "agent")
	cases := []cancelVector{
		{Name: "plain", ApprovalID: "ar-0190f0e0-0000-7000-8000-000000000000", Reason: "customer withdrew the request", IssuedAt: 1_800_000_000},
		{Name: "hostile reason", ApprovalID: "ar-0190f0e0-0000-7000-8000-0000000000aa", Reason: "no — \"dup\" <b>&\\\u2028é😀\u0001", IssuedAt: 1_700_000_001},
		{Name: "reason signed as sent, spaces kept", ApprovalID: "ar-0190f0e0-0000-7000-8000-0000000000bb", Reason: "  superseded by order #8835\n", IssuedAt: 1_800_000_059},
	}
	for _, c := range cases {
		c.Key = "agent"
		pre, err := canon.Marshal(map[string]any{"approval_id": c.ApprovalID, "issued_at": c.IssuedAt, "reason": c.Reason})
		if err != nil {
			t.Fatal(err)
		}
		c.Signed = string(pre)
		// The server's signer and verifier are the authority on the format.
		c.Header = httpapi.SignCancelProof(k, c.ApprovalID, c.Reason, time.Unix(c.IssuedAt, 0))
		if err := httpapi.VerifyCancelProof(c.Header, k.Public(), c.ApprovalID, c.Reason, time.Unix(c.IssuedAt, 0)); err != nil {
			t.Fatalf("%s: chiod refuses the header: %v", c.Name, err)
		}
		ts, sigHex, _ := strings.Cut(c.Header, ".")
		sig, _ := hex.DecodeString(sigHex)
		if ts != itoa(c.IssuedAt) || !ed25519.Verify(k.Public().Ed25519(), signed.Message(httpapi.CancelProofSchema, pre), sig) {
			t.Fatalf("%s: header is not over the generic canonical form", c.Name)
		}
		// Bound to the reason and to the cancel domain: another reason, or a
		// read proof over the same id, cannot cancel.
		if httpapi.VerifyCancelProof(c.Header, k.Public(), c.ApprovalID, c.Reason+"!", time.Unix(c.IssuedAt, 0)) == nil {
			t.Fatalf("%s: the header verifies for another reason", c.Name)
		}
		readPre, err := canon.Marshal(map[string]any{"request_id": c.ApprovalID, "issued_at": c.IssuedAt})
		if err != nil {
			t.Fatal(err)
		}
		read := itoa(c.IssuedAt) + "." + hex.EncodeToString(k.SignRaw(signed.Message("chio.call-status.v1", readPre)))
		if httpapi.VerifyStatusProof(read, k.Public(), c.ApprovalID, time.Unix(c.IssuedAt, 0)) != nil {
			t.Fatalf("%s: the read proof itself is malformed", c.Name)
		}
		if httpapi.VerifyCancelProof(read, k.Public(), c.ApprovalID, c.Reason, time.Unix(c.IssuedAt, 0)) == nil {
			t.Fatalf("%s: a read proof verifies as a cancel proof", c.Name)
		}
		out.Cases = append(out.Cases, c)
	}
	check(t, "cancel_proof.json", out)
}

// --- approval tokens ---

type tokenRequest struct {
	ApprovalID    string          `json:"approval_id"`
	Kind          string          `json:"kind"`
	SubjectID     string          `json:"subject_id"`
	ParameterHash string          `json:"parameter_hash"`
	Questions     json.RawMessage `json:"questions,omitempty"`
}

type tokenVector struct {
	Name     string       `json:"name"`
	Key      string       `json:"key"`
	Request  tokenRequest `json:"request"` // the fields of the approval request a token binds to
	Decision string       `json:"decision"`
	TokenID  string       `json:"token_id"`
	IssuedAt int64        `json:"issued_at"`
	TTL      int64        `json:"ttl_seconds"`
	Note     string       `json:"note,omitempty"`
	Amended  string       `json:"amended_arguments,omitempty"` // JSON text
	Answers  string       `json:"answers,omitempty"`           // JSON text, as the kernel wants them
	Token    string       `json:"token"`                       // the signed token, exactly
}

func TestApprovalToken(t *testing.T) {
	out := struct {
		header
		Cases []tokenVector `json:"cases"`
	}{header: header{"Approval tokens (chio.approval-token.v1) signed by the approver key for request: token is the exact signed JSON to present at POST /approvals/{id}/respond. expires_at = issued_at + ttl_seconds."}}
	agent := key(t, "agent").Public().String()
	toolReq := tokenRequest{ApprovalID: "ar-0190f0e0-0000-7000-8000-0000000000aa", Kind: approval.KindToolCall, SubjectID: agent,
		ParameterHash: sketchHash(t)}
	askReq := tokenRequest{ApprovalID: "ar-0190f0e0-0000-7000-8000-0000000000bb", Kind: approval.KindQuestion, SubjectID: agent,
		ParameterHash: "0000000000000000000000000000000000000000000000000000000000000001",
		Questions:     json.RawMessage(`[{"id":"framework","text":"Which framework?","type":"single","options":["react","vue"],"allow_other":true},{"id":"features","text":"Enable:","type":"multi","options":["auth","payments"]},{"id":"name","text":"Project name?","type":"text"}]`)}
	cases := []tokenVector{
		{Name: "approve", Request: toolReq, Decision: approval.DecisionApproved, TokenID: "at-0190f0e0-0000-7000-8000-000000000001", IssuedAt: 1_800_000_000, TTL: 600},
		{Name: "approve with a note", Request: toolReq, Decision: approval.DecisionApproved, TokenID: "at-0190f0e0-0000-7000-8000-000000000002", IssuedAt: 1_800_000_000, TTL: 3600,
			Note: "ok — customer \"verified\"\u2028<b>&\\"},
		{Name: "approve an amended call", Request: toolReq, Decision: approval.DecisionApproved, TokenID: "at-0190f0e0-0000-7000-8000-000000000003", IssuedAt: 1_800_000_000, TTL: 600,
			Note: "300 max", Amended: `{"customer_id": "cust-9012", "amount": 300, "currency": "USD", "memo": "\u00e9\ud83d\ude00"}`},
		{Name: "answer a question", Request: askReq, Decision: approval.DecisionApproved, TokenID: "at-0190f0e0-0000-7000-8000-000000000004", IssuedAt: 1_800_000_000, TTL: 600,
			Answers: `{"framework": "svelte", "features": ["auth", "payments"], "name": "Zoë"}`},
		{Name: "deny", Request: toolReq, Decision: approval.DecisionDenied, TokenID: "at-0190f0e0-0000-7000-8000-000000000005", IssuedAt: 1_800_000_000, TTL: 600,
			Note: "duplicate refund"},
	}
	k := key(t, "approver")
	for _, c := range cases {
		c.Key = "approver"
		req := &approval.Request{ApprovalID: c.Request.ApprovalID, Kind: c.Request.Kind, SubjectID: c.Request.SubjectID,
			ParameterHash: c.Request.ParameterHash, Questions: c.Request.Questions}
		tok := approval.NewToken(req, k.Public(), c.Decision, time.Unix(c.IssuedAt, 0), time.Duration(c.TTL)*time.Second)
		tok.ID, tok.Note = c.TokenID, c.Note
		if c.Amended != "" {
			tok.AmendedArguments = json.RawMessage(c.Amended)
		}
		if c.Answers != "" {
			var qs []approval.Question
			if err := json.Unmarshal(req.Questions, &qs); err != nil {
				t.Fatal(err)
			}
			if err := approval.ValidateAnswers(qs, json.RawMessage(c.Answers)); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			tok.Answers = json.RawMessage(c.Answers)
		}
		raw, err := tok.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := signed.Verify(raw, approval.TokenSchema, k.Public()); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		c.Token = string(raw)
		out.Cases = append(out.Cases, c)
	}
	check(t, "approval_token.json", out)
}

// --- tool-call signatures (chiod → http tool servers) ---

type toolCallVector struct {
	Name      string `json:"name"`
	Key       string `json:"key"` // the signing kernel's key (a test seed)
	PublicKey string `json:"public_key"`
	Server    string `json:"server"`
	SentAtMs  int64  `json:"sent_at_ms"`
	Body      string `json:"body"`    // the exact request body
	Message   string `json:"message"` // server "\n" sent_at "\n" hex(SHA-256(body)), signed under the domain
	Signature string `json:"signature"`
}

func TestToolCallSignature(t *testing.T) {
	out := struct {
		header
		Cases []toolCallVector `json:"cases"`
	}{header: header{"Headers on a call chiod sends to an http tool server: X-Chio-Server = server, X-Chio-Sent-At = sent_at_ms, " +
		"X-Chio-Signature = hex Ed25519(kernel key, \"chio.tool-call.v1\" || 0x00 || message), message = server || \"\\n\" || sent_at_ms || \"\\n\" || hex(SHA-256(body))."}}
	k := key(t, "approver")
	cases := []toolCallVector{
		{Name: "refund", Server: "payments", SentAtMs: 1_800_000_000_123,
			Body: `{"request_id":"req-1","tool":"issue_refund","arguments":{"amount":450,"currency":"USD"}}`},
		{Name: "non-ASCII body", Server: "db-server", SentAtMs: 1_700_000_000_001,
			Body: `{"request_id":"odd \"quoted\" id","tool":"write_row","arguments":{"note":"é\u2028"}}`},
		// Zero has spellings of its own that are not its decimal ("-0",
		// "00"): testdata/sdk/tool_call_sent_at.json.
		{Name: "sent at the epoch", Server: "payments", SentAtMs: 0,
			Body: `{"request_id":"req-0","tool":"ping","arguments":{}}`},
	}
	for _, c := range cases {
		c.Key, c.PublicKey = "approver", k.Public().String()
		msg := signed.ToolCallMessage(c.Server, c.SentAtMs, []byte(c.Body))
		c.Message = string(msg)
		c.Signature = hex.EncodeToString(k.SignRaw(signed.Message(signed.ToolCallDomain, msg)))
		// The tool server's verifier is the authority on the format.
		v, err := toolserver.NewVerifier(c.PublicKey, c.Server)
		if err != nil {
			t.Fatal(err)
		}
		v.Now = func() time.Time { return time.UnixMilli(c.SentAtMs) }
		h := http.Header{}
		h.Set(signed.ToolCallServerHeader, c.Server)
		h.Set(signed.ToolCallSentAtHeader, itoa(c.SentAtMs))
		h.Set(signed.ToolCallSignatureHeader, c.Signature)
		// chiod sends the body's request_id as the Idempotency-Key.
		var call struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(c.Body), &call); err != nil {
			t.Fatal(err)
		}
		h.Set(toolserver.IdempotencyKeyHeader, call.RequestID)
		if err := v.Verify(h, []byte(c.Body)); err != nil {
			t.Fatalf("%s: toolserver refuses the vector: %v", c.Name, err)
		}
		out.Cases = append(out.Cases, c)
	}
	check(t, "tool_call.json", out)
}
