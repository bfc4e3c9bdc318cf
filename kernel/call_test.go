package kernel

import (
	"testing"
	"unicode/utf8"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/signed"
)

func TestProofPayloadIsCanonical(t *testing.T) {
	for _, c := range [][5]string{
		{"req-1", "cap-1", "demo", "echo", "ab"},
		{"r\"q", "c\\p", "sérvér", "tööl😀", "\u2028<&>"},
	} {
		got, err := proofPayload(c[0], c[1], c[2], c[3], c[4], 1_800_000_000)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := canon.Marshal(map[string]any{"request_id": c[0], "capability_id": c[1], "server": c[2],
			"tool": c[3], "parameter_hash": c[4], "issued_at": 1_800_000_000})
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		// What is signed and verified is the payload under its domain.
		msg, err := proofMessage(c[0], c[1], c[2], c[3], c[4], 1_800_000_000)
		if err != nil || string(msg) != string(signed.Message(CallProofSchema, want)) {
			t.Fatalf("proofMessage %q (%v), want %q", msg, err, signed.Message(CallProofSchema, want))
		}
	}
	if _, err := proofPayload("a\xff", "c", "s", "t", "p", 1); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
	if _, err := proofMessage("a\xff", "c", "s", "t", "p", 1); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

// canonicalParameterHash writes the hashed object directly; it must agree
// with the generic ParameterHash on canonical inputs, including hostile
// strings in the server and tool names.
func TestCanonicalParameterHashAgrees(t *testing.T) {
	for _, c := range []struct{ server, tool, args, intent string }{
		{"demo", "echo", `{}`, ``},
		{"pay", "issue_refund", `{"amount":450,"currency":"USD","customer_id":"c"}`, `{"max_amount":{"currency":"USD","units":450},"purpose":"x"}`},
		{"a\"b\\c", "t\u2028\u0001é", `{"k":["<&>",1.5,null,true]}`, `null`},
	} {
		want, err := ParameterHash(c.server, c.tool, []byte(c.args), []byte(c.intent))
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonicalParameterHash(c.server, c.tool, []byte(c.args), []byte(c.intent))
		if err != nil || got != want {
			t.Errorf("%+v: %s, want %s (%v)", c, got, want, err)
		}
	}
}

func FuzzCanonicalParameterHash(f *testing.F) {
	f.Add("demo", "echo", `{"a":1}`, `{"purpose":"p"}`)
	f.Fuzz(func(t *testing.T, server, tool, args, intent string) {
		if !utf8.ValidString(server) || !utf8.ValidString(tool) {
			return // refused before hashing (ParameterHash would replace them with U+FFFD)
		}
		a, err := canon.Canonicalize([]byte(args))
		if err != nil || a[0] != '{' {
			return
		}
		var in []byte
		if intent != "" {
			if in, err = canon.Canonicalize([]byte(intent)); err != nil {
				return
			}
		}
		want, err := ParameterHash(server, tool, a, in)
		if err != nil {
			return
		}
		if got, err := canonicalParameterHash(server, tool, a, in); err != nil || got != want {
			t.Fatalf("%q %q %s %s: %s, want %s (%v)", server, tool, a, in, got, want, err)
		}
	})
}
