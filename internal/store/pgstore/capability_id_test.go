package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// An authority may sign a capability id PostgreSQL text cannot hold (a
// NUL, invalid UTF-8): such a capability was accepted for calls, but
// pgstore could never revoke it (Revoke failed, Revoked said false). The
// kernel now refuses it when presented, so no call runs under it; a
// capability of request-id characters is accepted and revocable.
func TestCapabilityIDPostgresCannotKeyIsRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	st := openPG(t, dsn)
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &countingDispatcher{calls: map[string]int{}}
	k, err := kernel.New(kernel.Config{Key: storetest.Key(), Policy: p, Store: st, Dispatcher: disp, Clock: clk,
		Relay: st.Events(), Authorities: []keys.PublicKey{authority.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	st.Events().Attach(k)
	t.Cleanup(k.Close)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capWith := func(id string) []byte {
		c := &kernel.Capability{Schema: kernel.CapabilitySchema, ID: id, Issuer: authority.Public().String(),
			Subject: agent.Public().String(), Grants: []string{"echo"}, IssuedAt: clk.Now().Unix(), ExpiresAt: clk.Now().Add(time.Hour).Unix()}
		raw, err := signed.Sign(authority, kernel.CapabilitySchema, c)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for i, id := range []string{"cap-\x00evil", "cap-\xffevil"} {
		out, err := k.Submit(context.Background(), testkit.NewCall(t, agent, capWith(id), "demo", "echo", fmt.Sprintf(`{"i":%d}`, i), "", clk.Now()))
		if !errors.Is(err, kernel.ErrCapabilityInvalid) {
			t.Fatalf("capability id %q: want refused as invalid, got %+v %v", id, out, err)
		}
	}
	if len(disp.calls) != 0 {
		t.Fatalf("the tool ran %d times under capabilities no store can revoke", len(disp.calls))
	}
	good := capWith("cap-authority.issued:1")
	if out, err := k.Submit(context.Background(), testkit.NewCall(t, agent, good, "demo", "echo", `{"i":10}`, "", clk.Now())); err != nil || out.Status != kernel.StatusAllowed {
		t.Fatalf("first call: %+v %v", out, err)
	}
	if err := k.Revoke(context.Background(), "cap-authority.issued:1"); err != nil {
		t.Fatal(err)
	}
	if out, err := k.Submit(context.Background(), testkit.NewCall(t, agent, good, "demo", "echo", `{"i":11}`, "", clk.Now())); err != nil || out.Status != kernel.StatusDenied {
		t.Fatalf("call after revocation: want denied, got %+v %v", out, err)
	}
}
