package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A rolling upgrade: replicas of this build are running when a newer build
// starts and migrates the database. They do not know what the newer schema
// means, so from then on they must commit nothing (no decision, no vote, no
// receipt), say why, and stop reporting ready.

// migrateNewer does what a newer build's migrate does: under the
// migrations' advisory lock, it records one schema version more than this
// build knows.
func migrateNewer(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(0x6368696f)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO chio_schema (version, name) VALUES ($1, 'from_a_newer_build.sql')", pgstore.SchemaVersion()+1); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func countRows(t *testing.T, dsn, sql string, args ...any) int {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A replica already running when the schema moves on refuses every
// commit (with reads, without, with receipts), says it certainly wrote
// nothing, and turns unready; a replica that commits nothing turns
// unready too (its heartbeat notices).
func TestOlderReplicaCommitsNothingOnceTheSchemaMovedOn(t *testing.T) {
	dsn := pgtest.Database(t)
	old, idle := openPG(t, dsn), openPG(t, dsn)
	if err := old.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "before", Status: kernel.StatusAllowed})
	}); err != nil {
		t.Fatal(err)
	}
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	writes := map[string]func(kernel.Tx) error{
		"a write after a read": func(tx kernel.Tx) error {
			if _, err := tx.Call("after-read"); !errors.Is(err, kernel.ErrNotFound) {
				return err
			}
			return tx.PutCall(&kernel.CallRecord{RequestID: "after-read", Status: kernel.StatusAllowed})
		},
		"a write alone": func(tx kernel.Tx) error {
			return tx.PutCall(&kernel.CallRecord{RequestID: "after-alone", Status: kernel.StatusAllowed})
		},
		"a receipt": func(tx kernel.Tx) error {
			tx.AppendReceipt(&receipt.Receipt{ID: "rc-after", RequestID: "after-receipt", Timestamp: time.Now().Unix(),
				ToolServer: "demo", ToolName: "echo", Decision: receipt.Decision{Verdict: receipt.Allow}})
			return tx.PutCall(&kernel.CallRecord{RequestID: "after-receipt", Status: kernel.StatusAllowed})
		},
	}
	for what, fn := range writes {
		err := old.Update(context.Background(), fn)
		if !errors.Is(err, pgstore.ErrSchemaTooNew) || !errors.Is(err, kernel.ErrUnavailable) || !errors.Is(err, kernel.ErrNotCommitted) {
			t.Errorf("%s on a replica older than the database's schema: %v, want ErrSchemaTooNew, ErrUnavailable and ErrNotCommitted", what, err)
		}
	}
	if n := countRows(t, dsn, "SELECT count(*) FROM chio_calls WHERE request_id LIKE 'after%'"); n != 0 {
		t.Errorf("a replica older than the database's schema committed %d call records after the schema moved on", n)
	}
	if n := countRows(t, dsn, "SELECT count(*) FROM chio_receipts"); n != 0 {
		t.Errorf("a replica older than the database's schema committed %d receipts after the schema moved on", n)
	}
	if err := old.Ready(); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("a replica older than the database's schema reports ready: %v", err)
	}
	eventually(t, "the idle older replica to report unready", func() bool { return idle.Ready() != nil })
	if err := idle.Ready(); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Errorf("idle older replica: %v, want ErrSchemaTooNew", err)
	}
}

// A kernel on an older replica runs no tool once the schema moved on: the
// decision cannot be made durable, so the call is answered with an error
// and never dispatched.
func TestOlderReplicaRunsNoToolOnceTheSchemaMovedOn(t *testing.T) {
	dsn := pgtest.Database(t)
	disp := &countingDispatcher{calls: map[string]int{}}
	rs := kernelsOn(t, dsn, 1, disp)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := rs[0].k.IssueCapability(agent.Public(), []string{"echo"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := rs[0].k.Submit(context.Background(), testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", rs[0].clock.Now())); err != nil || out.Status != kernel.StatusAllowed {
		t.Fatalf("before the upgrade: %+v %v", out, err)
	}
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	receipts := countRows(t, dsn, "SELECT count(*) FROM chio_receipts")
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":2}`, "", rs[0].clock.Now())
	out, err := rs[0].k.Submit(context.Background(), call)
	disp.mu.Lock()
	ran := disp.calls[call.RequestID]
	disp.mu.Unlock()
	after := countRows(t, dsn, "SELECT count(*) FROM chio_receipts")
	if err == nil || ran != 0 || after != receipts {
		t.Fatalf("a kernel older than the database's schema took a call after the schema moved on: answered %+v %v, dispatched %d, receipts %d -> %d",
			out, err, ran, receipts, after)
	}
}

// The reverse order: a newer build's migration must wait for an older
// replica's commit already in flight (which then lands before the new
// schema), never slip in between its reads and its COMMIT.
func TestMigrationWaitsForAnOlderReplicasCommitInFlight(t *testing.T) {
	dsn := pgtest.Database(t)
	old := openPG(t, dsn)
	inTx, release := make(chan struct{}), make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		committed <- old.Update(context.Background(), func(tx kernel.Tx) error {
			if _, err := tx.Call("in-flight"); !errors.Is(err, kernel.ErrNotFound) {
				return err
			}
			close(inTx)
			<-release
			return tx.PutCall(&kernel.CallRecord{RequestID: "in-flight", Status: kernel.StatusAllowed})
		})
	}()
	<-inTx
	migrated := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { migrated <- migrateNewer(ctx, dsn) }()
	// Either the migration commits at once, or it waits on the lock.
	var first error
	slipped := false
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case first = <-migrated:
			slipped = true
		default:
		}
		if slipped || countRows(t, dsn, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the migration neither committed nor waited for a lock")
		}
	}
	close(release)
	err := <-committed
	if slipped {
		t.Fatalf("a newer build's migration committed (%v) while an older replica's commit was in flight; "+
			"that commit then went on under the new schema: %v", first, err)
	}
	if err != nil {
		t.Fatalf("the commit in flight before the migration: %v", err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("the migration after the commit in flight: %v", err)
	}
	if err := old.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "after", Status: kernel.StatusAllowed})
	}); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Fatalf("a commit after the migration: %v, want ErrSchemaTooNew", err)
	}
}

// A fenced replica claims nothing either: neither the calls in flight of
// a replica that is gone (it could not finish them, and while it lives no
// upgraded replica could take them over) nor due deadlines (it cannot
// fire them; the upgraded replicas would wait out its claim).
func TestOlderReplicaClaimsNothingOnceTheSchemaMovedOn(t *testing.T) {
	dsn := pgtest.Database(t)
	old, gone := openPG(t, dsn), openPG(t, dsn)
	if err := gone.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "orphan", Status: kernel.StatusDispatching, DecisionReceiptID: "rc-x"})
	}); err != nil {
		t.Fatal(err)
	}
	gone.Close() // its calls in flight are orphans at once
	due := parkDue(t, old, 1, time.Now().Unix()-1)
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the older replica to report unready", func() bool { return old.Ready() != nil })
	orphans, err := old.ClaimOrphans(context.Background(), 10)
	if len(orphans) != 0 || countRows(t, dsn, "SELECT count(*) FROM chio_calls WHERE owner = $1", old.ID()) != 0 {
		t.Errorf("a replica older than the database's schema took over %d calls in flight of a replica that is gone (%v)", len(orphans), err)
	}
	claimed, err := old.ClaimDeadlines(context.Background(), time.Now(), "", 10)
	if len(claimed) != 0 || countRows(t, dsn, "SELECT count(*) FROM chio_approvals WHERE claimed_by = $1", old.ID()) != 0 {
		t.Errorf("a replica older than the database's schema claimed deadlines %v of %v (%v)", claimed, due, err)
	}
}

// A checkpoint is the kernel key's signature over the receipt log, stored
// for every replica to serve: a replica that a newer schema fenced must
// store none either, from the moment the migration committed (before its
// own commit or heartbeat noticed), and say why.
func TestOlderReplicaStoresNoCheckpointOnceTheSchemaMovedOn(t *testing.T) {
	dsn := pgtest.Database(t)
	old := openPG(t, dsn)
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	raw, _, err := receipt.SignCheckpoint(storetest.Key(), 1, [32]byte{1}, time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	err = old.PutCheckpoint(context.Background(), 1, raw)
	if !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Fatalf("a checkpoint stored by a replica the schema moved past: %v, want ErrSchemaTooNew", err)
	}
	if n := countRows(t, dsn, "SELECT count(*) FROM chio_checkpoints"); n != 0 {
		t.Fatalf("%d checkpoints stored by the fenced replica, want none", n)
	}
}

// The same from the moment the migration committed, before the older
// replica's own commit or heartbeat noticed it: a sweep in that moment
// (a rolling upgrade is when replicas stop and leave calls in flight)
// must claim nothing either.
func TestOlderReplicaClaimsNothingBeforeItNoticedTheSchemaMovedOn(t *testing.T) {
	dsn := pgtest.Database(t)
	old, gone := openPG(t, dsn), openPG(t, dsn)
	if err := gone.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "orphan", Status: kernel.StatusDispatching, DecisionReceiptID: "rc-x"})
	}); err != nil {
		t.Fatal(err)
	}
	gone.Close() // its calls in flight are orphans at once
	due := parkDue(t, old, 1, time.Now().Unix()-1)
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	orphans, err := old.ClaimOrphans(context.Background(), 10)
	if len(orphans) != 0 || countRows(t, dsn, "SELECT count(*) FROM chio_calls WHERE owner = $1", old.ID()) != 0 {
		t.Errorf("a replica older than the database's schema took over %d calls in flight of a replica that is gone (%v)", len(orphans), err)
	}
	claimed, err := old.ClaimDeadlines(context.Background(), time.Now(), "", 10)
	if len(claimed) != 0 || countRows(t, dsn, "SELECT count(*) FROM chio_approvals WHERE claimed_by = $1", old.ID()) != 0 {
		t.Errorf("a replica older than the database's schema claimed deadlines %v of %v (%v)", claimed, due, err)
	}
	if old.Ready() == nil {
		t.Error("a replica whose claims met a newer schema still reports ready")
	}
}
