package daemon

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// chiod gives the email channel the kernel's stored requests: a job for a
// request decided while it waited sends nothing. The relay here (port 1)
// refuses every connection, so a channel that tried to mail would fail.
func TestEmailReadsTheStoredRequestBeforeMailing(t *testing.T) {
	p, err := policy.Parse([]byte("[kernel]\npublic_url = \"http://127.0.0.1:7420\"\n\n"+
		"[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n\n"+
		"[channels.email]\nsmtp_addr = \"127.0.0.1:1\"\nfrom = \"chio@example.com\"\n"), "email.toml")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	announced := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "any", Status: approval.StatusPending,
		ExpiresAt: clk.Now().Add(time.Hour).Unix(), Quorum: 1, Tier: 1}
	asked := ""
	stored := func(id string) (*approval.Request, error) {
		asked = id
		cp := *announced
		cp.Status = approval.StatusDenied
		return &cp, nil
	}
	pc, err := buildChannels(p, keys.FromSeed(make([]byte, 32)), t.TempDir(), clk, slog.New(slog.DiscardHandler),
		func() *policy.Policy { return p }, stored)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.close()
	if err := pc.email.Deliver(channels.WithDeliveryID(context.Background(), "d-1"), "approval.requested", announced); err != nil || asked != "ar-1" {
		t.Fatalf("a request decided while queued: Deliver = %v (stored request read: %q), want nothing mailed and no failure", err, asked)
	}
}
