package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A revocation committed on replica B after replica A's allow decision read
// chio_revoked, but before A's transaction commits, stops the call: A's
// batch reads the capabilities again under the log head's lock (which
// revocations take too) and runs again. Under READ COMMITTED the first read
// alone took no lock Revoke needed, so the allow committed after the
// acknowledged revocation and the tool ran.
//
// The window is made deterministic: a blocker holds an uncommitted row of
// chio_calls with A's request id, so A's insert of its call record (after
// all its reads, before the head's lock) waits; B revokes meanwhile; then
// the blocker rolls back.
func TestRevocationOnAnotherReplicaStopsADecisionInFlight(t *testing.T) {
	dsn := pgtest.Database(t)
	disp := &countingDispatcher{calls: map[string]int{}}
	rs := kernelsOn(t, dsn, 2, disp)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, capb, err := rs[0].k.IssueCapability(agent.Public(), []string{"echo"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", rs[0].clock.Now())
	blocker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO chio_calls (request_id, status, rec) VALUES ($1, 'blocker', '\\x7b7d')", call.RequestID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out *kernel.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := rs[0].k.Submit(ctx, call)
		done <- result{out, err}
	}()
	waitForLockWaiter(t, blocker) // A has read "not revoked" and waits on its insert
	revokeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rs[1].k.Revoke(revokeCtx, capb.ID); err != nil {
		t.Fatalf("revoke on replica B: %v", err) // durable and acknowledged from here on
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("submit on A: %v", r.err)
	}
	disp.mu.Lock()
	runs := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if r.out.Status != kernel.StatusDenied || r.out.Guard != kernel.GuardCapability || runs != 0 {
		t.Fatalf("revoked on B (acknowledged) before A's allow committed, yet A answered %s (%s) and the tool ran %d time(s)",
			r.out.Status, r.out.Guard, runs)
	}
}

// waitForLockWaiter waits until some other backend of this database is
// blocked on a lock (the one c holds).
func waitForLockWaiter(t *testing.T, c *pgx.Conn) {
	t.Helper()
	eventually(t, "a transaction blocked on the held lock", func() bool {
		var n int
		err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
}

// A revocation committed with receipts in one transaction (one function,
// or a group commit of a revocation and other calls' decisions) commits at
// once: the re-read of unrevoked capabilities under the head's lock skips
// those the transaction revokes itself (it used to fail every such group
// commit and run it again until it split).
func TestRevocationCommitsWithReceiptsInOneTransaction(t *testing.T) {
	s := openPG(t, pgtest.Database(t))
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		if revoked, err := tx.Revoked("cap-x"); err != nil || revoked {
			return fmt.Errorf("revoked %v %v", revoked, err)
		}
		if err := tx.Revoke("cap-x", 1); err != nil {
			return err
		}
		tx.AppendReceipt(&receipt.Receipt{ID: "rc-1", Timestamp: 1, RequestID: "req-1", Decision: receipt.Decision{Verdict: receipt.Allow}})
		return nil
	})
	if err != nil {
		t.Fatalf("a revocation and a receipt in one commit: %v", err)
	}
}
