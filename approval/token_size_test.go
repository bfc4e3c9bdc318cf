package approval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Every answer can be within its 4000 bytes, and amended arguments within
// theirs, while the signed token is over MaxTokenBytes, which the kernel
// refuses unread ("malformed approval token"). Sign is where every Go
// signer (chio approval approve and watch, the SDK's approver) builds the
// token: it refuses one the kernel would refuse, before anything is sent.
func TestSignRefusesATokenOverMaxTokenBytes(t *testing.T) {
	tok := NewToken(pending(), alice.Public(), DecisionApproved, t0, 10*time.Minute)
	answers := map[string]string{}
	for i := range 17 {
		answers[string(rune('a'+i))] = strings.Repeat("x", 4000)
	}
	tok.Answers, _ = json.Marshal(answers)
	raw, err := tok.Sign(alice)
	if err == nil || raw != nil || !strings.Contains(err.Error(), "65536") {
		t.Fatalf("Sign of a token with %d bytes of answers: %d bytes, %v; want a refusal naming the %d-byte limit",
			len(tok.Answers), len(raw), err, MaxTokenBytes)
	}
	tok.Answers, _ = json.Marshal(map[string]string{"a": strings.Repeat("x", 4000)})
	if raw, err := tok.Sign(alice); err != nil || len(raw) > MaxTokenBytes {
		t.Fatalf("Sign of a small token: %d bytes, %v", len(raw), err)
	}
}
