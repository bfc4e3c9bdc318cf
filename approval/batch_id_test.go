package approval

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// signedBatch is alice's batch for db-server/write_* with id and patterns.
func signedBatch(t *testing.T, id, server, tool string) []byte {
	t.Helper()
	b := &BatchToken{Schema: BatchSchema, ID: id, Approver: alice.Public().String(), Audience: thisKernel, ServerPattern: server,
		ToolPattern: tool, NotBefore: t0.Unix(), NotAfter: t0.Add(time.Hour).Unix()}
	raw, err := b.Sign(alice)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// A batch's id must be one DELETE /approvals/batch/{id} can carry, or the
// batch could not be revoked; the ids chio mints always are.
func TestVerifyBatchAcceptsOnlyRevocableIDs(t *testing.T) {
	trusted := func(string) bool { return true }
	for _, id := range []string{NewBatchID(), "ba-0192f3c4-7d1e-7a00-8000-000000000000", "a", "..a", "a.", "x:y_z-1.2",
		strings.Repeat("b", MaxIDLen)} {
		if _, err := VerifyBatch(signedBatch(t, id, "db-server", "write_*"), thisKernel, trusted, t0); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", strings.Repeat("b", MaxIDLen+1), "a/b", "a?b", "a%2Fb", "a b", "a#b",
		"x\r\x1b[2K", "ba-\u202e1", "ba-\u200b", "ba-é"} {
		_, err := VerifyBatch(signedBatch(t, id, "db-server", "write_*"), thisKernel, trusted, t0)
		if !errors.Is(err, ErrMalformedBatch) || !strings.Contains(err.Error(), IDRule) {
			t.Errorf("id %q: got %v, want ErrMalformedBatch naming the id rule", id, err)
		}
	}
}

// Patterns are printed to whoever decides what to revoke: they may hold
// no control, space, or invisible and text-direction characters, and no
// pattern a call's name could match is refused.
func TestVerifyBatchRefusesPatternsWithControlOrFormatCharacters(t *testing.T) {
	trusted := func(string) bool { return true }
	for _, p := range []string{"*", "db-server", "write_*", "dépôt*", "a.b:c*", strings.Repeat("x", 255) + "*"} {
		if _, err := VerifyBatch(signedBatch(t, NewBatchID(), p, p), thisKernel, trusted, t0); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
	for _, p := range []string{"", "a*b", "**", "\r*", "demo\x1b[8m", "write\t*", "echo\n", "\u202eohce", "de\u200bmo",
		"a b*", " *", "\x7f", "\u0085*", "\u2028", strings.Repeat("x", 257)} {
		for _, field := range []string{"server", "tool"} {
			server, tool := "db-server", "write_*"
			if field == "server" {
				server = p
			} else {
				tool = p
			}
			_, err := VerifyBatch(signedBatch(t, NewBatchID(), server, tool), thisKernel, trusted, t0)
			if !errors.Is(err, ErrMalformedBatch) || !strings.Contains(err.Error(), field+"_pattern") {
				t.Errorf("%s pattern %q: got %v, want ErrMalformedBatch naming %s_pattern", field, p, err, field)
			}
		}
	}
}
