package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Every capability chio accepts can be revoked: an authority key may sign
// an id of any length, but Revoke takes at most MaxRequestIDLen bytes, so a
// longer id is refused when presented.
func TestCapabilityIDTooLongToRevokeIsRefused(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	kkey := keys.FromSeed(make([]byte, 32))
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	p, err := policy.Parse([]byte(fmt.Sprintf(testPolicy, keys.FromSeed([]byte("approver-approver-approver-32byt")).Public())), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "chio.db"), kkey, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k, err := kernel.New(kernel.Config{Key: kkey, Policy: p, Store: st, Dispatcher: &fakeDispatcher{}, Clock: clk,
		Authorities: []keys.PublicKey{authority.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	now := clk.Now()
	capObj := &kernel.Capability{Schema: kernel.CapabilitySchema, ID: "cap-" + strings.Repeat("x", 200),
		Issuer: authority.Public().String(), Subject: agent.Public().String(), Grants: []string{"echo"},
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
	capRaw, err := signed.Sign(authority, kernel.CapabilitySchema, capObj)
	if err != nil {
		t.Fatal(err)
	}
	submit := func() (*kernel.Outcome, error) {
		c := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"msg":"hi"}`, "", clk.Now())
		return k.Submit(context.Background(), c)
	}
	if out, err := submit(); !errors.Is(err, kernel.ErrCapabilityInvalid) {
		t.Fatalf("a capability whose id Revoke cannot take: %+v %v", out, err)
	}
	// At the limit it is accepted, and revocable.
	capObj.ID = "cap-" + strings.Repeat("x", kernel.MaxRequestIDLen-4)
	if capRaw, err = signed.Sign(authority, kernel.CapabilitySchema, capObj); err != nil {
		t.Fatal(err)
	}
	if out, err := submit(); err != nil || out.Status != kernel.StatusAllowed {
		t.Fatalf("first call: %+v %v", out, err)
	}
	if err := k.Revoke(context.Background(), capObj.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := submit(); err != nil || out.Status != kernel.StatusDenied {
		t.Fatalf("call after revocation: want denied, got %+v %v", out, err)
	}
}

// Nor can a store key every character an authority may sign: PostgreSQL
// text holds no NUL and no invalid UTF-8, so such an id was accepted for
// calls on pgstore but Revoke failed on it. A capability id takes the
// characters a request id does, and anything else is refused when
// presented, on every store.
func TestCapabilityIDOutsideRequestIDCharactersIsRefused(t *testing.T) {
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	for _, id := range []string{"cap-\x00evil", "cap-\xffbad", "cap-é", "cap with space", "cap/slash", "cap-\n", ".", ".."} {
		c := &kernel.Capability{Schema: kernel.CapabilitySchema, ID: id, Issuer: authority.Public().String(),
			Subject: agent.Public().String(), Grants: []string{"echo"}, IssuedAt: 1, ExpiresAt: 2}
		raw, err := signed.Sign(authority, kernel.CapabilitySchema, c)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if _, _, err := kernel.ParseCapability(raw, authority.Public()); !errors.Is(err, kernel.ErrCapabilityInvalid) {
			t.Errorf("capability id %q: want ErrCapabilityInvalid, got %v", id, err)
		}
	}
	c := &kernel.Capability{Schema: kernel.CapabilitySchema, ID: "cap-A.b_c:d-9", Issuer: authority.Public().String(),
		Subject: agent.Public().String(), Grants: []string{"echo"}, IssuedAt: 1, ExpiresAt: 2}
	raw, err := signed.Sign(authority, kernel.CapabilitySchema, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := kernel.ParseCapability(raw, authority.Public()); err != nil {
		t.Fatalf("a capability id of request-id characters: %v", err)
	}
}

// An agent's idempotent retry of its own call gets the stored outcome even
// after an approver amended the call (it used to be refused as a
// different call: the amendment had replaced the hash it is matched on).
func TestRetryOfAnAmendedCallGetsTheStoredOutcome(t *testing.T) {
	f := lifecycle(t, "deny")
	ctx := context.Background()
	c := f.call(t, "issue_refund", `{"customer_id":"cust-9012","amount":450,"currency":"USD"}`,
		`{"purpose":"refund order #8834","max_amount":{"units":450,"currency":"USD"}}`)
	out, err := f.k.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"customer_id":"cust-9012","amount":300,"currency":"USD"}`)
	}), "", "")
	if err != nil || res.Outcome != "approved" {
		t.Fatalf("%+v %v", res, err)
	}
	// The agent restarts and repeats its call: same id, same content.
	retry := f.call(t, "issue_refund", `{"customer_id":"cust-9012","amount":450,"currency":"USD"}`,
		`{"purpose":"refund order #8834","max_amount":{"units":450,"currency":"USD"}}`)
	retry.RequestID = c.RequestID
	f.sign(t, retry, f.agent, f.clock.Now())
	again, err := f.k.Submit(ctx, retry)
	if err != nil {
		t.Fatalf("idempotent retry of the agent's own call: %v", err)
	}
	if again.ReceiptID == "" || again.Status != kernel.StatusAllowed || f.disp.count(c.RequestID) != 1 {
		t.Fatalf("retry: %+v (dispatched %d)", again, f.disp.count(c.RequestID))
	}
	// Other content under the same id is still a different call.
	other := f.call(t, "issue_refund", `{"customer_id":"cust-9012","amount":300,"currency":"USD"}`,
		`{"purpose":"refund order #8834","max_amount":{"units":450,"currency":"USD"}}`)
	other.RequestID = c.RequestID
	f.sign(t, other, f.agent, f.clock.Now())
	if _, err := f.k.Submit(ctx, other); !errors.Is(err, kernel.ErrRequestUsed) {
		t.Fatalf("the amended content sent by the agent under its id: %v", err)
	}
}

// MaxArgumentsBytes bounds the canonical arguments (what is stored, shown
// and sent), which can be much longer than what was sent ("9e15").
func TestArgumentsLimitAppliesToTheCanonicalForm(t *testing.T) {
	f := newFixture(t)
	n := (kernel.MaxArgumentsBytes - 64) / 5
	args := `{"a":[` + strings.TrimSuffix(strings.Repeat("9e15,", n), ",") + `]}`
	if len(args) > kernel.MaxArgumentsBytes {
		t.Fatal("test arguments too large")
	}
	c := f.call(t, "echo", args, "")
	if out, err := f.k.Submit(context.Background(), c); !errors.Is(err, kernel.ErrBadCall) {
		t.Fatalf("%d bytes as sent, %d canonical: %+v %v", len(args), 5*n*4, out, err)
	}
	if _, err := f.k.Call(c.RequestID); !errors.Is(err, kernel.ErrNotFound) {
		t.Fatalf("a refused call left a record: %v", err)
	}
}

// Server, tool and operation names meet the policy's naming rule before
// anything is stored (the operation, unsigned, used to reach the signed
// receipt's action at any size).
func TestCallNamesAreBoundedBeforeAnythingIsStored(t *testing.T) {
	f := newFixture(t)
	for name, mutate := range map[string]func(*kernel.ToolCall){
		"long operation": func(c *kernel.ToolCall) { c.Operation = strings.Repeat("o", 512<<10) },
		"long tool":      func(c *kernel.ToolCall) { c.Tool = strings.Repeat("t", 600) },
		"long server":    func(c *kernel.ToolCall) { c.Server = strings.Repeat("s", 600) },
		"spaced tool":    func(c *kernel.ToolCall) { c.Tool = "issue refund" },
		"control char":   func(c *kernel.ToolCall) { c.Operation = "invoke\n" },
	} {
		c := f.call(t, "not_declared", `{"msg":"hi"}`, "")
		mutate(c)
		f.sign(t, c, f.agent, f.clock.Now())
		if out, err := f.k.Submit(context.Background(), c); !errors.Is(err, kernel.ErrBadCall) {
			t.Errorf("%s: %+v %v", name, out, err)
		}
		if _, err := f.k.Call(c.RequestID); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("%s: a refused call left a record: %v", name, err)
		}
	}
}

// A request id "." or ".." could key a call whose status no URL path can
// name (routers redirect them away): refused as a malformed call, before
// its proof is checked.
func TestDotRequestIDsAreRefused(t *testing.T) {
	f := newFixture(t)
	w := f.w
	if out := w.Submit(t, "echo", `{}`, ""); out.Status != kernel.StatusAllowed {
		t.Fatalf("setup: a well-formed call is %s", out.Status)
	}
	for _, id := range []string{".", ".."} {
		c := w.Call(t, "echo", `{}`, "")
		c.RequestID = id
		if _, err := w.Kernel.Submit(context.Background(), c); !errors.Is(err, kernel.ErrBadCall) {
			t.Errorf("request id %q: want ErrBadCall, got %v", id, err)
		}
	}
}
