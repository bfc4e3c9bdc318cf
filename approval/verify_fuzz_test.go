package approval

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// fuzzSigners are the keys a fuzzed token may be signed with and name:
// two approvers pending() trusts, the requesting agent, and a stranger.
var fuzzSigners = []keys.PrivateKey{alice, bob, agentKey, mallory}

// FuzzVerifySignedToken builds tokens from fuzzed fields and signs them
// with real keys, so that the fuzzer reaches every check behind the
// signature (which FuzzVerify's raw bytes almost never pass). Verify must
// accept exactly the tokens SPEC §3's rules (Verify's doc comment) allow,
// judged here from the token as the approver wrote it; and a token it
// accepts re-verifies identically and is returned as it was signed.
func FuzzVerifySignedToken(f *testing.F) {
	now := t0.Add(time.Minute)
	// issuedOff and lifetime are seconds from now and from issued_at.
	f.Add("at-1", DecisionApproved, "", int64(-60), int64(600), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "")
	f.Add("at-2", DecisionDenied, "no", int64(0), int64(3600), []byte(`{"amount":5}`), []byte(`{"q1":"yes"}`), uint8(1), uint8(1), uint8(0), "denied")
	f.Add("at-3", DecisionApproved, "", int64(61), int64(10), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "")      // future
	f.Add("at-4", DecisionApproved, "", int64(-3600), int64(3601), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "") // too long
	f.Add("at-5", DecisionApproved, "", int64(-10), int64(10), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "")     // expires now
	f.Add("at-6", "maybe", "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "")
	f.Add("at-7", DecisionApproved, "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(2), uint8(2), uint8(0), "")  // the agent
	f.Add("at-8", DecisionApproved, "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(0), uint8(1), uint8(0), "")  // names bob, alice signs
	f.Add("at-9", DecisionApproved, "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(7), "")  // binding changed
	f.Add("at-10", DecisionApproved, "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(1), uint8(1), uint8(8), "") // bob has voted
	f.Add("at-11", DecisionApproved, "", int64(0), int64(60), []byte(nil), []byte(nil), uint8(0), uint8(0), uint8(0), "denied")
	f.Add("", DecisionApproved, string(make([]byte, MaxNoteLen+1)), int64(0), int64(60), []byte(`[1e400]`), []byte(nil), uint8(3), uint8(3), uint8(0), "")
	f.Fuzz(func(t *testing.T, id, decision, note string, issuedOff, lifetime int64, amended, answers []byte,
		signer, named, binding uint8, outcome string) {
		// Keep the times within canon's ±2^53 (else nothing signs).
		const lim = 1 << 40
		if issuedOff > lim || issuedOff < -lim || lifetime > lim || lifetime < -lim {
			return
		}
		req := pending()
		if binding&8 != 0 {
			req.Votes = []Vote{{Approver: bob.Public().String(), TokenID: "at-prior", Decision: DecisionApproved}}
		}
		key := fuzzSigners[int(signer)%len(fuzzSigners)]
		tok := NewToken(req, fuzzSigners[int(named)%len(fuzzSigners)].Public(), decision, now, time.Minute)
		tok.ID, tok.Note = id, note
		tok.IssuedAt = now.Unix() + issuedOff
		tok.ExpiresAt = tok.IssuedAt + lifetime
		tok.AmendedArguments, tok.Answers = amended, answers
		switch binding & 7 {
		case 1:
			tok.RequestID = "ar-2"
		case 2:
			tok.GovernedIntentHash = "cd"
		case 3:
			tok.Subject = bob.Public().String()
		}
		raw, err := tok.Sign(key)
		if err != nil {
			return // not JSON (amended or answers), or numbers canon refuses
		}
		// The token as it went on the wire (encoding/json writes invalid
		// UTF-8 as U+FFFD, so Note may differ from the fuzzer's).
		var sent Token
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatalf("signed token does not decode: %v\n%s", err, raw)
		}
		nowU := now.Unix()
		want := len(raw) <= MaxTokenBytes && canon.Check(raw) == nil &&
			sent.ID != "" && (sent.Decision == DecisionApproved || sent.Decision == DecisionDenied) && len(sent.Note) <= MaxNoteLen &&
			sent.RequestID == req.ApprovalID && sent.GovernedIntentHash == req.ParameterHash && sent.Subject == req.SubjectID &&
			sent.IssuedAt <= nowU+60 && nowU < sent.ExpiresAt && sent.ExpiresAt > sent.IssuedAt && sent.ExpiresAt-sent.IssuedAt <= 3600 &&
			nowU < req.ExpiresAt &&
			sent.Approver == key.Public().String() && // signed by the key it names
			(key.Public() == alice.Public() || key.Public() == bob.Public()) && // a trusted approver, not the agent
			!req.HasVoted(sent.Approver) &&
			(outcome == "" || outcome == sent.Decision)
		got, err := Verify(raw, req, now, outcome)
		if (err == nil) != want {
			t.Fatalf("Verify: %v, the rules say accept=%v\n%s", err, want, raw)
		}
		if err != nil {
			return
		}
		again, err := Verify(raw, req, now, outcome)
		if err != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("an accepted token re-verifies differently: %v\n%+v\n%+v", err, got, again)
		}
		// What Verify returns is what was signed, member for member.
		sent.Signature = got.Signature
		if !reflect.DeepEqual(normalRaw(*got), normalRaw(sent)) {
			t.Fatalf("accepted token differs from the signed one:\n%+v\n%+v", got, sent)
		}
		if !SignedByTrusted(raw, req) {
			t.Fatal("an accepted token is not SignedByTrusted")
		}
		if c, err := canon.Canonicalize(raw); err != nil || !bytes.Equal(c, raw) {
			t.Fatalf("an accepted (signed) token is not canonical: %v\n%s\n%s", err, raw, c)
		}
	})
}

// normalRaw drops the difference between an absent and an empty raw
// member, which the decoders spell differently.
func normalRaw(t Token) Token {
	if len(t.AmendedArguments) == 0 {
		t.AmendedArguments = nil
	}
	if len(t.Answers) == 0 {
		t.Answers = nil
	}
	return t
}

// FuzzVerifyBatchSigned does for standing approvals what
// FuzzVerifySignedToken does for tokens: VerifyBatch accepts exactly the
// signed batch tokens its documented rules allow (window ≤ 30 days and
// not over, this kernel's audience, sane limits, a trusted approver that
// is not the subject), and an accepted one re-verifies identically.
func FuzzVerifyBatchSigned(f *testing.F) {
	now := t0
	day := int64(24 * 3600)
	f.Add("b-1", "payment-server", "charge", int64(2), int64(100), int64(-1), int64(0), int64(day), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add("b-2", "*", "charge*", int64(0), int64(-1), int64(500), int64(-day), int64(31*day), uint8(1), uint8(1), uint8(1), uint8(1))
	f.Add("..", "", "a*b", int64(-1), int64(-5), int64(-1), int64(0), int64(0), uint8(0), uint8(0), uint8(2), uint8(2))
	f.Add("b-3", "s", "t", int64(0), int64(-1), int64(-1), int64(-2*day), int64(day), uint8(0), uint8(2), uint8(3), uint8(3))
	f.Add("b/4", "s", "t", int64(1), int64(0), int64(0), int64(0), int64(30*day), uint8(3), uint8(0), uint8(0), uint8(4))
	f.Fuzz(func(t *testing.T, id, server, tool string, maxCalls, perCall, total, nbOff, window int64,
		signer, subject, audience, currency uint8) {
		const lim = 1 << 40
		if nbOff > lim || nbOff < -lim || window > lim || window < -lim {
			return
		}
		key := fuzzSigners[int(signer)%len(fuzzSigners)]
		b := &BatchToken{Schema: BatchSchema, ID: id, Approver: key.Public().String(), Audience: thisKernel,
			ServerPattern: server, ToolPattern: tool, NotBefore: now.Unix() + nbOff}
		b.NotAfter = b.NotBefore + window
		switch audience % 4 {
		case 1:
			b.Audience = otherKern
		case 2:
			b.Audience = ""
		}
		switch subject % 4 {
		case 1:
			b.Subject = agentKey.Public().String()
		case 2:
			b.Subject = key.Public().String()
		case 3:
			b.Subject = "ed25519:nope"
		}
		cur := []string{"USD", "", "usd", "EUR", "X"}[int(currency)%5]
		if maxCalls != 0 {
			b.MaxCalls = &maxCalls
		}
		if perCall != 0 {
			b.MaxAmountPerCall = &Amount{Units: perCall, Currency: cur}
		}
		if total != 0 {
			b.MaxTotalAmount = &Amount{Units: total, Currency: cur}
		}
		raw, err := b.Sign(key)
		if err != nil {
			return
		}
		var sent BatchToken
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatalf("signed batch does not decode: %v\n%s", err, raw)
		}
		trusted := func(a string) bool { return a == alice.Public().String() || a == bob.Public().String() }
		okAmount := func(a *Amount) bool { return a == nil || a.Units >= 0 && a.Currency != "" }
		_, subjErr := keys.ParsePublicKey(sent.Subject)
		want := len(raw) <= MaxTokenBytes && canon.Check(raw) == nil &&
			ValidID(sent.ID) && sent.Audience == thisKernel &&
			CheckPattern(sent.ServerPattern) == nil && CheckPattern(sent.ToolPattern) == nil &&
			(sent.MaxCalls == nil || *sent.MaxCalls >= 1) && okAmount(sent.MaxAmountPerCall) && okAmount(sent.MaxTotalAmount) &&
			sent.NotAfter > sent.NotBefore && sent.NotAfter-sent.NotBefore <= 30*day && now.Unix() < sent.NotAfter &&
			(sent.Subject == "" || subjErr == nil && sent.Subject != sent.Approver) &&
			trusted(sent.Approver)
		got, err := VerifyBatch(raw, thisKernel, trusted, now)
		if (err == nil) != want {
			t.Fatalf("VerifyBatch: %v, the rules say accept=%v\n%s", err, want, raw)
		}
		if err != nil {
			return
		}
		again, err := VerifyBatch(raw, thisKernel, trusted, now)
		if err != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("an accepted batch re-verifies differently: %v", err)
		}
		sent.Signature = got.Signature
		if !reflect.DeepEqual(*got, sent) {
			t.Fatalf("accepted batch differs from the signed one:\n%+v\n%+v", got, sent)
		}
	})
}
