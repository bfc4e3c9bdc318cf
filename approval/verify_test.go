package approval

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

var (
	t0       = time.Unix(1_800_000_000, 0)
	agentKey = keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	alice    = keys.FromSeed([]byte("alice-alice-alice-alice-alice-32"))
	bob      = keys.FromSeed([]byte("bob-bob-bob-bob-bob-bob-bob-bob-"))
	mallory  = keys.FromSeed([]byte("mallory-mallory-mallory-mallory-"))
	// thisKernel is the audience batch tokens are verified for.
	thisKernel = keys.FromSeed([]byte("kernel-kernel-kernel-kernel-ker-")).Public().String()
	otherKern  = keys.FromSeed([]byte("other-kernel-other-kernel-other-")).Public().String()
)

func pending() *Request {
	return &Request{
		ApprovalID: "ar-1", Kind: KindToolCall, SubjectID: agentKey.Public().String(),
		SubjectPublicKey: agentKey.Public().String(), ParameterHash: strings.Repeat("ab", 32),
		ExpiresAt: t0.Add(time.Hour).Unix(), CreatedAt: t0.Unix(), Status: StatusPending, Quorum: 1, DenyQuorum: 1,
		TrustedApprovers: []string{alice.Public().String(), bob.Public().String()},
	}
}

func sign(t *testing.T, k keys.PrivateKey, mutate func(*Token)) []byte {
	t.Helper()
	tok := NewToken(pending(), k.Public(), DecisionApproved, t0, 10*time.Minute)
	if mutate != nil {
		mutate(tok)
	}
	raw, err := tok.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestVerifyAcceptsAGoodToken(t *testing.T) {
	tok, err := Verify(sign(t, alice, nil), pending(), t0.Add(time.Minute), "approved")
	if err != nil || tok.Approver != alice.Public().String() {
		t.Fatalf("%v %v", tok, err)
	}
}

// Every attack of the seed and SPEC §4, each its own case.
func TestVerifyRejectsAttacks(t *testing.T) {
	cases := []struct {
		name    string
		raw     func(t *testing.T) []byte
		req     func(r *Request)
		at      time.Time
		outcome string
		want    error
	}{
		{name: "token for another request", raw: func(t *testing.T) []byte { return sign(t, alice, func(k *Token) { k.RequestID = "ar-2" }) }, want: ErrWrongRequest},
		{name: "token for another intent (other arguments)", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) { k.GovernedIntentHash = strings.Repeat("cd", 32) })
		}, want: ErrWrongIntent},
		{name: "token for another agent", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) { k.Subject = mallory.Public().String() })
		}, want: ErrWrongSubject},
		{name: "untrusted approver", raw: func(t *testing.T) []byte { return sign(t, mallory, nil) }, want: ErrUntrustedSigner},
		{name: "empty approver set", raw: func(t *testing.T) []byte { return sign(t, alice, nil) }, req: func(r *Request) { r.TrustedApprovers = nil }, want: ErrNoApprovers},
		{name: "self-approval by the agent's key", raw: func(t *testing.T) []byte { return sign(t, agentKey, nil) },
			req: func(r *Request) { r.TrustedApprovers = append(r.TrustedApprovers, agentKey.Public().String()) }, want: ErrSelfApproval},
		{name: "approver listed as requester", raw: func(t *testing.T) []byte { return sign(t, bob, nil) },
			req: func(r *Request) { r.Requesters = []string{bob.Public().String()} }, want: ErrSelfApproval},
		{name: "quorum with the same key twice", raw: func(t *testing.T) []byte { return sign(t, alice, nil) },
			req: func(r *Request) {
				r.Quorum = 2
				r.Votes = []Vote{{Approver: alice.Public().String(), TokenID: "at-other", Decision: DecisionApproved}}
			}, want: ErrDuplicateVote},
		{name: "expired", raw: func(t *testing.T) []byte { return sign(t, alice, nil) }, at: t0.Add(10 * time.Minute), want: ErrTokenExpired},
		{name: "not yet valid", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) {
				k.IssuedAt = t0.Add(3 * time.Minute).Unix()
				k.ExpiresAt = t0.Add(5 * time.Minute).Unix()
			})
		}, want: ErrNotYetValid},
		{name: "lifetime over 3600 s", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) { k.ExpiresAt = k.IssuedAt + 3601 })
		}, want: ErrLifetimeTooLong},
		{name: "zero lifetime", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) { k.ExpiresAt = k.IssuedAt })
		}, want: ErrTokenExpired},
		{name: "bad signature", raw: func(t *testing.T) []byte {
			raw := sign(t, alice, nil)
			i := strings.Index(string(raw), `"signature":"`) + len(`"signature":"`)
			c := byte('0')
			if raw[i] == '0' {
				c = '1'
			}
			raw[i] = c
			return raw
		}, want: ErrBadSignature},
		{name: "decision flipped after signing", raw: func(t *testing.T) []byte {
			return []byte(strings.Replace(string(sign(t, alice, nil)), `"approved"`, `"denied"`, 1))
		}, want: ErrBadSignature},
		{name: "signed by another key than the approver named", raw: func(t *testing.T) []byte {
			tok := NewToken(pending(), alice.Public(), DecisionApproved, t0, 10*time.Minute)
			raw, _ := tok.Sign(bob)
			return raw
		}, want: ErrBadSignature},
		{name: "HTTP outcome disagrees with the signed decision", raw: func(t *testing.T) []byte { return sign(t, alice, nil) }, outcome: "denied", want: ErrOutcomeMismatch},
		{name: "approval after the request deadline", raw: func(t *testing.T) []byte { return sign(t, alice, nil) },
			req: func(r *Request) { r.ExpiresAt = t0.Add(30 * time.Second).Unix() }, at: t0.Add(31 * time.Second), want: ErrRequestExpired},
		{name: "duplicate JSON key", raw: func(t *testing.T) []byte {
			return []byte(strings.Replace(string(sign(t, alice, nil)), `{`, `{"decision":"denied",`, 1))
		}, want: ErrMalformedToken},
		{name: "oversized", raw: func(t *testing.T) []byte { return []byte(`{"note":"` + strings.Repeat("x", MaxTokenBytes) + `"}`) }, want: ErrMalformedToken},
		{name: "weak approver key", raw: func(t *testing.T) []byte {
			return sign(t, alice, func(k *Token) {
				k.Approver = "ed25519:0100000000000000000000000000000000000000000000000000000000000000"
			})
		}, req: func(r *Request) {
			r.TrustedApprovers = append(r.TrustedApprovers, "ed25519:0100000000000000000000000000000000000000000000000000000000000000")
		}, want: ErrUntrustedSigner},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := pending()
			if c.req != nil {
				c.req(req)
			}
			at := c.at
			if at.IsZero() {
				at = t0.Add(time.Minute)
			}
			if _, err := Verify(c.raw(t), req, at, c.outcome); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestBoundariesAtSkewAndTTL(t *testing.T) {
	// issued_at exactly 60 s ahead is accepted; lifetime exactly 3600 s is accepted.
	raw := sign(t, alice, func(k *Token) { k.IssuedAt = t0.Add(60 * time.Second).Unix(); k.ExpiresAt = k.IssuedAt + 3600 })
	if _, err := Verify(raw, pending(), t0, ""); err != nil {
		t.Fatal(err)
	}
	// now == expires_at is expired (the window is half-open).
	raw = sign(t, alice, nil)
	if _, err := Verify(raw, pending(), t0.Add(10*time.Minute), ""); !errors.Is(err, ErrTokenExpired) {
		t.Fatal(err)
	}
}

func TestVerifyBatch(t *testing.T) {
	trusted := func(k string) bool { return k == alice.Public().String() }
	mk := func(k keys.PrivateKey, f func(*BatchToken)) []byte {
		calls := int64(3)
		b := &BatchToken{Schema: BatchSchema, ID: NewBatchID(), Approver: k.Public().String(), Audience: thisKernel,
			ServerPattern: "db-server", ToolPattern: "write_*", MaxCalls: &calls, NotBefore: t0.Unix(), NotAfter: t0.Add(time.Hour).Unix()}
		if f != nil {
			f(b)
		}
		raw, err := b.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if _, err := VerifyBatch(mk(alice, nil), thisKernel, trusted, t0); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		raw  []byte
		want error
	}{
		"untrusted":    {mk(mallory, nil), ErrUntrustedSigner},
		"bad pattern":  {mk(alice, func(b *BatchToken) { b.ToolPattern = "a*b" }), ErrMalformedBatch},
		"window over":  {mk(alice, func(b *BatchToken) { b.NotAfter = t0.Unix() }), ErrBatchWindow},
		"window huge":  {mk(alice, func(b *BatchToken) { b.NotAfter = t0.Add(31 * 24 * time.Hour).Unix() }), ErrBatchWindow},
		"self subject": {mk(alice, func(b *BatchToken) { b.Subject = alice.Public().String() }), ErrSelfApproval},
		"tampered":     {[]byte(strings.Replace(string(mk(alice, nil)), `"max_calls":3`, `"max_calls":300`, 1)), ErrBadSignature},
		"no audience":  {mk(alice, func(b *BatchToken) { b.Audience = "" }), ErrMalformedBatch},
		"other kernel": {mk(alice, func(b *BatchToken) { b.Audience = otherKern }), ErrWrongAudience},
		"audience re-pointed": {[]byte(strings.Replace(string(mk(alice, func(b *BatchToken) { b.Audience = otherKern })),
			otherKern, thisKernel, 1)), ErrBadSignature},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := VerifyBatch(c.raw, thisKernel, trusted, t0); !errors.Is(err, c.want) {
				t.Fatalf("got %v want %v", err, c.want)
			}
		})
	}
}

func TestBatchCoversAndExhausts(t *testing.T) {
	calls := int64(2)
	b := &Batch{Token: &BatchToken{ServerPattern: "pay*", ToolPattern: "charge", MaxCalls: &calls,
		MaxAmountPerCall: &Amount{100, "USD"}, MaxTotalAmount: &Amount{150, "USD"}, NotBefore: 0, NotAfter: 100}}
	usd := func(n int64) *Amount { return &Amount{n, "USD"} }
	if !b.Covers("s", "payment-server", "charge", usd(80), 10) {
		t.Fatal("should cover")
	}
	for _, c := range []struct {
		name   string
		server string
		amount *Amount
		now    int64
	}{
		{"over per-call", "payment-server", usd(101), 10},
		{"no amount", "payment-server", nil, 10},
		{"other currency", "payment-server", &Amount{50, "EUR"}, 10},
		{"other server", "db", usd(1), 10},
		{"after window", "payment-server", usd(1), 100},
	} {
		if b.Covers("s", c.server, "charge", c.amount, c.now) {
			t.Errorf("%s: covered", c.name)
		}
	}
	b.Use(usd(80))
	if b.Covers("s", "payment-server", "charge", usd(80), 10) {
		t.Fatal("total would exceed 150")
	}
	b.Use(usd(50))
	if b.Covers("s", "payment-server", "charge", usd(1), 10) {
		t.Fatal("max_calls exhausted but still covers")
	}
}

func FuzzVerify(f *testing.F) {
	tok := NewToken(pending(), alice.Public(), DecisionApproved, t0, 10*time.Minute)
	good, _ := tok.Sign(alice)
	f.Add(good)
	f.Add([]byte(`{"schema":"chio.approval-token.v1"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Verify(raw, pending(), t0.Add(time.Minute), "")
		if err == nil && (got.Approver != alice.Public().String() && got.Approver != bob.Public().String()) {
			t.Fatalf("accepted a token from %s", got.Approver)
		}
	})
}

// A token whose signature does not verify tells its presenter nothing about
// the request's state: not who may approve it, nor who has voted. Respond
// takes a token from anyone who knows a request's id (the agent does), so
// an answer that differed by the named approver would let a forger probe
// the trusted set and the votes cast.
func TestForgedTokenLearnsNothingOfApproversOrVotes(t *testing.T) {
	forged := func(t *testing.T, named keys.PrivateKey) []byte {
		tok := NewToken(pending(), named.Public(), DecisionApproved, t0, 10*time.Minute)
		raw, err := tok.Sign(mallory) // mallory holds none of these keys
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	voted := pending()
	voted.Quorum = 2
	voted.Votes = []Vote{{Approver: alice.Public().String(), TokenID: "at-other", Decision: DecisionApproved}}
	noApprovers := pending()
	noApprovers.TrustedApprovers = nil
	requester := pending()
	requester.Requesters = []string{bob.Public().String()}
	cases := []struct {
		name  string
		named keys.PrivateKey
		req   *Request
	}{
		{"an approver who has voted", alice, voted},
		{"an approver who has not", bob, voted},
		{"a key nobody trusts", keys.FromSeed([]byte("stranger-stranger-stranger-32byt")), pending()},
		{"a request nobody may approve", alice, noApprovers},
		{"an approver listed as a requester", bob, requester},
	}
	for _, c := range cases {
		if _, err := Verify(forged(t, c.named), c.req, t0.Add(time.Minute), ""); !errors.Is(err, ErrBadSignature) {
			t.Errorf("a token naming %s, signed by another key: %v, want %v", c.name, err, ErrBadSignature)
		}
	}
}
