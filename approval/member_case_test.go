package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/signed"
)

// A signature covers the JCS form of a token, in which members are sorted,
// so member order is unsigned. Were {"decision":"denied","Decision":"approved"}
// accepted, whoever holds the token would pick the decision the kernel acts
// on by reordering the members (a case-insensitive decoder keeps the last
// spelling). Verify must refuse the token in either order.
func TestTokenWithCaseVariantMembersRefused(t *testing.T) {
	tok := NewToken(pending(), alice.Public(), DecisionDenied, t0, 10*time.Minute)
	b, _ := json.Marshal(tok)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "signature")
	m["Decision"] = DecisionApproved // a second spelling of the same field
	if _, err := canon.Marshal(m); !errors.Is(err, canon.ErrDuplicateKey) {
		t.Fatalf("canon.Marshal of members differing only in case: %v, want canon.ErrDuplicateKey", err)
	}
	// canon refuses to build it, so write the JCS form by hand ("Decision"
	// sorts before every lower-case name) and sign it as a careless or
	// malicious signer could.
	delete(m, "Decision")
	rest, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	member := []byte(`"Decision":"approved",`)
	payload := append(append([]byte(`{`), member...), rest[1:]...)
	canonical, err := signed.SignCanonical(alice, TokenSchema, payload)
	if err != nil {
		t.Fatal(err)
	}
	// Same signature, "Decision" member moved last.
	reordered := append(bytes.Replace(canonical[:len(canonical)-1], member, nil, 1), []byte(`,"Decision":"approved"}`)...)
	if err := signed.Verify(reordered, TokenSchema, alice.Public()); !errors.Is(err, canon.ErrDuplicateKey) {
		t.Errorf("signed.Verify of the reordered token: %v, want canon.ErrDuplicateKey", err)
	}
	for name, raw := range map[string][]byte{"canonical order": canonical, "reordered": reordered} {
		got, err := Verify(raw, pending(), t0.Add(time.Minute), "")
		if !errors.Is(err, ErrMalformedToken) {
			d := ""
			if got != nil {
				d = got.Decision
			}
			t.Errorf("%s: token with a case-variant duplicate member gave decision %q (err %v); want ErrMalformedToken: "+
				"one signature, two decisions", name, d, err)
		}
	}
}

// A single member spelt in another case ("Decision" alone) names no field
// of the token exactly: it is refused, not read as "decision".
func TestTokenMemberNamesMatchExactly(t *testing.T) {
	tok := NewToken(pending(), alice.Public(), DecisionApproved, t0, 10*time.Minute)
	b, _ := json.Marshal(tok)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "signature")
	m["Decision"] = m["decision"]
	delete(m, "decision")
	payload, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signed.SignCanonical(alice, TokenSchema, payload)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Verify(raw, pending(), t0.Add(time.Minute), ""); err == nil {
		t.Fatalf("token spelling \"Decision\" accepted as decision %q", got.Decision)
	}
}

// Question ids become the member names of the signed answers object, so
// ids differing only in case (which canon would refuse there) are refused
// when the questions are asked.
func TestAskQuestionIDsUniqueIgnoringCase(t *testing.T) {
	ask := func(a, b string) string {
		return `{"questions":[{"id":"` + a + `","text":"t","type":"text"},{"id":"` + b + `","text":"t","type":"text"}]}`
	}
	for _, ids := range [][2]string{{"q", "Q"}, {"cost", "co\u017ft"}, {"k", "\u212a"}, {"a", "a"}} {
		if _, err := ParseAsk([]byte(ask(ids[0], ids[1]))); !errors.Is(err, ErrBadQuestions) {
			t.Errorf("ids %+q and %+q: got %v, want ErrBadQuestions", ids[0], ids[1], err)
		}
	}
	if _, err := ParseAsk([]byte(ask("ab", "ba"))); err != nil {
		t.Fatalf("distinct ids refused: %v", err)
	}
}
