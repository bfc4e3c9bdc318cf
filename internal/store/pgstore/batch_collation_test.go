package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

var icuDatabases atomic.Int64

// icuDatabase creates a database whose default collation is ICU's en-US,
// as a database created on a server initialised under en_US.UTF-8 sorts
// text: case-insensitively first, and "-" "." "_" ":" not by their bytes.
func icuDatabase(t *testing.T) string {
	t.Helper()
	srv, err := pgtest.Shared()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("icu_en_us_%d_%d", os.Getpid(), icuDatabases.Add(1))
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+
		" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"); err != nil {
		t.Skipf("skipping: this PostgreSQL cannot create an ICU en-US database: %v", err)
	}
	return srv.DSN(name)
}

// Standing approval ids are chosen by their signers ([A-Za-z0-9._:-]), and
// a database's default collation is rarely C. Batches and LiveBatches
// visit ids in their byte order (kernel.ReadTx, what boltstore does) on any
// collation: a listing pages the same on both stores, and Batches(after)
// inside a transaction visits every id after after. It used to take the
// rows PostgreSQL's collation put after after, then keep those Go's byte
// order put after it: "ba-a" after "ba-B" (bytes: 'a' > 'B'; en-US: a < B)
// was left out.
//
// A database migrated before (schema 2, ids in its default collation)
// gets the byte order on upgrade.
func TestBatchesVisitIDsInByteOrderWhateverTheCollation(t *testing.T) {
	dsn := icuDatabase(t)
	s := openPG(t, dsn)
	ids := []string{"ba-a", "ba-B", "ba.1", "ba_z", "baZ", "ba:9", "BA-c"}
	if err := s.Update(context.Background(), func(tx kernel.Tx) error {
		for _, id := range ids {
			if err := tx.PutBatch(&approval.Batch{Token: &approval.BatchToken{ID: id, Approver: "k", ServerPattern: "*",
				ToolPattern: "*", NotAfter: 1 << 40}, Raw: []byte(`{}`)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(ids))
	after := func(a string) []string {
		var out []string
		for _, id := range sorted {
			if id > a {
				out = append(out, id)
			}
		}
		return out
	}
	visit := func(scan func(fn func(*approval.Batch) bool) error) []string {
		var got []string
		if err := scan(func(b *approval.Batch) bool { got = append(got, b.Token.ID); return true }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q (byte order)", what, got, want)
		}
	}
	s.View(func(tx kernel.ReadTx) error {
		for _, a := range []string{"", "ba-B", "ba.1"} {
			check(fmt.Sprintf("View Batches(%q)", a), visit(func(fn func(*approval.Batch) bool) error { return tx.Batches(a, fn) }), after(a))
		}
		check("View LiveBatches", visit(func(fn func(*approval.Batch) bool) error { return tx.LiveBatches(1, fn) }), sorted)
		return nil
	})
	s.Update(context.Background(), func(tx kernel.Tx) error {
		for _, a := range []string{"", "ba-B", "ba.1"} {
			check(fmt.Sprintf("Update Batches(%q)", a), visit(func(fn func(*approval.Batch) bool) error { return tx.Batches(a, fn) }), after(a))
		}
		check("Update LiveBatches", visit(func(fn func(*approval.Batch) bool) error { return tx.LiveBatches(1, fn) }), sorted)
		return nil
	})

	s.Close()
	exec(t, dsn, `ALTER TABLE chio_batches ALTER COLUMN id TYPE text COLLATE "default"`)
	exec(t, dsn, "DROP TABLE chio_vote_arrivals") // schema 4
	exec(t, dsn, "DELETE FROM chio_schema WHERE version >= 3")
	openPG(t, dsn).View(func(tx kernel.ReadTx) error {
		check("View Batches(\"ba-B\") after the upgrade", visit(func(fn func(*approval.Batch) bool) error { return tx.Batches("ba-B", fn) }),
			after("ba-B"))
		return nil
	})
}
