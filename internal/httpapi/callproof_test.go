package httpapi_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
)

func TestStatusProof(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := httpapi.SignStatusProof(keyAgent, "req-1", now)
	if err := httpapi.VerifyStatusProof(good, keyAgent.Public(), "req-1", now); err != nil {
		t.Fatal(err)
	}
	ts, sig, _ := strings.Cut(good, ".")
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)-1] ^= 1
		return string(b)
	}
	cases := []struct {
		name, header, id string
		at               time.Time
	}{
		{"another id", good, "req-2", now},
		{"another key", httpapi.SignStatusProof(keyOther, "req-1", now), "req-1", now},
		{"stale", good, "req-1", now.Add(61 * time.Second)},
		{"future", good, "req-1", now.Add(-61 * time.Second)},
		{"timestamp changed", "1800000001." + sig, "req-1", now},
		{"leading zero", "0" + ts + "." + sig, "req-1", now},
		{"signed", "+" + ts + "." + sig, "req-1", now},
		{"uppercase hex", ts + "." + strings.ToUpper(sig), "req-1", now},
		{"short signature", ts + "." + sig[:126], "req-1", now},
		{"bit flip", flip(good), "req-1", now},
		{"no dot", ts + sig, "req-1", now},
		{"two dots", ts + ".." + sig, "req-1", now},
		{"empty", "", "req-1", now},
		{"oversized", strings.Repeat("1", 200), "req-1", now},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := httpapi.VerifyStatusProof(c.header, keyAgent.Public(), c.id, c.at); !errors.Is(err, httpapi.ErrStatusProof) {
				t.Fatalf("got %v", err)
			}
		})
	}
	// Exactly 60 s either side is accepted.
	for _, d := range []time.Duration{-60 * time.Second, 60 * time.Second} {
		if err := httpapi.VerifyStatusProof(good, keyAgent.Public(), "req-1", now.Add(d)); err != nil {
			t.Fatalf("skew %s: %v", d, err)
		}
	}
}

func FuzzVerifyStatusProof(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add(httpapi.SignStatusProof(keyAgent, "req-1", now))
	f.Add("1800000000.00")
	f.Fuzz(func(t *testing.T, header string) {
		if httpapi.VerifyStatusProof(header, keyAgent.Public(), "req-1", now) == nil {
			// Only the one canonical header for this id can verify; Ed25519
			// signatures are deterministic and malleability is rejected.
			if header != httpapi.SignStatusProof(keyAgent, "req-1", proofTime(header)) {
				t.Fatalf("accepted %q", header)
			}
		}
	})
}

func proofTime(header string) time.Time {
	ts, _, _ := strings.Cut(header, ".")
	var n int64
	for _, c := range ts {
		n = n*10 + int64(c-'0')
	}
	return time.Unix(n, 0)
}
