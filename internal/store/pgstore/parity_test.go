package pgstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Parity of the two stores as users see them through the kernel: a user
// who moves from the embedded bbolt store to PostgreSQL (or reads a
// replica) gets the same answer to the same request.

// paritySide is a kernel on one store.
type paritySide struct {
	name  string
	k     *kernel.Kernel
	store kernel.Store
	clock *clock.Fake
}

// paritySides starts a kernel of replicaPolicy on a fresh bbolt store and
// one on a fresh PostgreSQL database, with the same kernel key and clock.
func paritySides(t *testing.T) []paritySide {
	t.Helper()
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "chio.db"), storetest.Key(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	var out []paritySide
	for _, s := range []struct {
		name  string
		store kernel.Store
	}{{"bbolt", bs}, {"postgres", openPG(t, pgtest.Database(t))}} {
		clk := clock.NewFake(time.Unix(1_800_000_000, 0))
		k, err := kernel.New(kernel.Config{Key: storetest.Key(), Policy: p, Store: s.store,
			Dispatcher: &countingDispatcher{calls: map[string]int{}}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Close)
		if err := k.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		out = append(out, paritySide{name: s.name, k: k, store: s.store, clock: clk})
	}
	return out
}
