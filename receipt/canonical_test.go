package receipt

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// The direct encoder must produce exactly the bytes of the generic path.
func TestFastEncoderMatchesGenericCanonicalization(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "é€😀", "quote\"back\\slash", "ctl\x01\x1f\n\t", "<html>&", "\u2028\u2029", "דּ"}
	pick := func() string { return strs[rng.IntN(len(strs))] + fmt.Sprint(rng.IntN(3)) }
	for i := 0; i < 500; i++ {
		r := &Receipt{Schema: Schema, ID: "rc-" + pick(), Seq: rng.Uint64N(1 << 53), Timestamp: rng.Int64N(1<<53) - 1<<52,
			RequestID: pick(), CapabilityID: pick(), Subject: pick(), ToolServer: pick(), ToolName: pick(), Action: pick(),
			ParameterHash: pick(), PolicyHash: pick(), KernelKey: k.Public().String(),
			Decision: []Decision{{Verdict: Allow}, {Verdict: Deny, Guard: pick(), Reason: pick()}, {Verdict: Incomplete, Reason: pick()}}[rng.IntN(3)],
			Metadata: map[string]any{pick(): pick(), "n": rng.IntN(1000), "nested": map[string]any{"z": []any{1.5, pick(), true, nil}}}}
		fast, err := signFast(k, r)
		if err != nil {
			t.Fatal(err)
		}
		generic, err := signed.Sign(k, Schema, r)
		if err != nil {
			t.Fatal(err)
		}
		if string(fast) != string(generic) {
			t.Fatalf("receipt %d differs:\nfast    %s\ngeneric %s", i, fast, generic)
		}
		if _, err := Verify(fast, k.Public()); err != nil {
			t.Fatal(err)
		}
	}
}

// The kernel's usual metadata (string values under lower-case ASCII
// names) is written without the generic canonicalizer: it must come out
// byte for byte as the generic path writes it, and whatever that path
// refuses (names that fold together) must still be refused.
func TestFastMetadataMatchesGenericCanonicalization(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"", "a", "b", "delivery", "previous_receipt_id", "a_", "a0", "z", "\x01ctl", "sp ace", "quo\"te", "A", "s", "\u017f", "é", "K", "k"}
	vals := []string{"", "at_least_once", "é€😀", "quote\"back\\slash", "ctl\x01\x1f\n\t", "<html>&", "\u2028\u2029", "bad\xffutf8", "\x7f"}
	for i := 0; i < 2000; i++ {
		m := map[string]any{}
		for range rng.IntN(10) {
			m[names[rng.IntN(len(names))]] = vals[rng.IntN(len(vals))]
		}
		if rng.IntN(8) == 0 {
			m["n"] = rng.IntN(3) // not a string: the generic path
		}
		r := &Receipt{Schema: Schema, ID: "rc-1", Seq: uint64(i), Timestamp: 1, RequestID: "req", CapabilityID: "cap",
			Subject: "s", ToolServer: "demo", ToolName: "echo", Action: "invoke", ParameterHash: "h", PolicyHash: "p",
			KernelKey: k.Public().String(), Decision: Decision{Verdict: Allow}, Metadata: m}
		fast, ferr := signFast(k, r)
		generic, gerr := signed.Sign(k, Schema, r)
		if (ferr == nil) != (gerr == nil) {
			t.Fatalf("metadata %q: fast error %v, generic error %v", m, ferr, gerr)
		}
		if string(fast) != string(generic) {
			t.Fatalf("metadata %q differs:\nfast    %s\ngeneric %s", m, fast, generic)
		}
	}
}

func TestSignRejectsOutOfRangeNumbersAndBadUTF8(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	if _, err := Sign(k, &Receipt{ID: "x", Seq: 1<<53 + 1, Decision: Decision{Verdict: Allow}}); err == nil {
		t.Fatal("seq beyond 2^53 signed")
	}
	if _, err := Sign(k, &Receipt{ID: "x\xff", Decision: Decision{Verdict: Allow}}); err == nil {
		t.Fatal("invalid UTF-8 signed")
	}
}
