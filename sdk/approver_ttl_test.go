package chio

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
)

// A token's times are whole seconds (issued_at, expires_at). WithTTL took
// a lifetime under a second and signed a token whose expires_at can equal
// its issued_at, which the kernel refuses: it must be refused when signing,
// as a bad request, and a lifetime of a second must make a token that
// expires after it was issued.
func TestWithTTLUnderASecondIsRefused(t *testing.T) {
	k, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{ApprovalID: "ar-1", SubjectID: "ed25519:00", ParameterHash: "sha256:00"}
	for _, d := range []time.Duration{time.Millisecond, 500 * time.Millisecond, 999 * time.Millisecond} {
		if _, err := SignApproval(req, k, WithTTL(d)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("WithTTL(%s): %v, want ErrBadRequest", d, err)
		}
	}
	raw, err := SignApproval(req, k, WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var tok approval.Token
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt <= tok.IssuedAt {
		t.Fatalf("a 1s token expires at %d, issued at %d", tok.ExpiresAt, tok.IssuedAt)
	}
}
