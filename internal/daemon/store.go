package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// store is what chiod needs of its store, whichever [store] driver.
type store interface {
	kernel.Store
	receipt.CheckpointStore
	QueueDepth() int64
	Ready() error
}

// storeHooks connect the store to the rest of chiod.
type storeHooks struct {
	observe func(batch int, d time.Duration) // each commit, for /metrics
	// phases: where a bbolt commit's time went, for /metrics
	phases func(run, sign, receipts, write time.Duration)
	onHeal func() // a failed bbolt store healed: finish calls left in flight
}

// opened is the store [store] selects; relay is set for a store shared by
// replicas (events travel between them), else nil.
type opened struct {
	store store
	relay *pgstore.Bus
	// phases: the store reports where a commit's time went (storeHooks.phases)
	phases bool
}

// openStore opens bbolt (one file in the data dir) or PostgreSQL (the DSN
// from the environment variable [store] dsn_env names: never from the file).
func openStore(ctx context.Context, p *policy.Policy, dataDir string, key keys.PrivateKey, log *receipt.Log, h storeHooks) (opened, error) {
	switch p.Store.Driver {
	case policy.StorePostgres:
		dsn := os.Getenv(p.Store.DSNEnv)
		if dsn == "" {
			return opened{}, fmt.Errorf("refusing to start: [store] dsn_env names %s, which is %w; export the PostgreSQL connection string in it", p.Store.DSNEnv, errDSNUnset)
		}
		s, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Key: key, Log: log, Observe: h.observe,
			Committers: p.Store.Committers, Lease: time.Duration(p.Store.LeaseSeconds) * time.Second})
		if err != nil {
			return opened{}, fmt.Errorf("refusing to start: %w", err)
		}
		return opened{store: s, relay: s.Events()}, nil
	case policy.StoreBbolt, "":
		observe := func(c boltstore.CommitStats) {
			if h.observe != nil {
				h.observe(c.Calls, c.Total)
			}
			if h.phases != nil {
				h.phases(c.Run, c.Sign, c.Receipts, c.Write)
			}
		}
		s, err := boltstore.Open(filepath.Join(dataDir, "chio.db"), key, boltstore.Options{Observe: observe, Log: log, OnHeal: h.onHeal})
		if err != nil {
			return opened{}, fmt.Errorf("refusing to start: %w", err)
		}
		return opened{store: s, phases: true}, nil
	}
	return opened{}, fmt.Errorf("refusing to start: unknown store driver %q", p.Store.Driver)
}

// storeKeyLost refuses a data dir holding a bbolt chio.db but no
// kernel.pem, before a new key is made: the store belongs to the key that
// created it (boltstore refuses any other), so generating one would only
// leave a wrong kernel.pem beside it and hide what is missing. (kernel.pem
// is written before the store is first opened, so a chio.db without one
// means the key was lost or never copied.) Other stat errors are left to
// loadOrCreateKey and boltstore.Open, which report them.
func storeKeyLost(p *policy.Policy, dataDir string) error {
	if p.Store.Driver != policy.StoreBbolt && p.Store.Driver != "" {
		return nil
	}
	keyPath, dbPath := filepath.Join(dataDir, "kernel.pem"), filepath.Join(dataDir, "chio.db")
	// An empty kernel.pem (left by a crash as it was created) holds no
	// key either: readOrForgetEmpty would generate one.
	if b, err := os.ReadFile(keyPath); !errors.Is(err, os.ErrNotExist) && (err != nil || strings.TrimSpace(string(b)) != "") {
		return nil
	}
	if _, err := os.Stat(dbPath); err != nil {
		return nil
	}
	return fmt.Errorf("refusing to start: %s exists but %s does not (or is empty): the store belongs to the kernel key that created it; "+
		"restore that kernel.pem, or start a new deployment on an empty data dir", dbPath, keyPath)
}

// mayHoldKey reports whether the store may have recorded the kernel key
// after opening with err. A database records a new key as it opens;
// pgstore marks each failure that came before it asked the database to
// record the key (pgstore.ErrKeyNotRecorded: the DSN, the connection, the
// migrations, a database holding another key), and any other failure,
// a lost answer to the key's INSERT among them, may have come after. An
// unset dsn_env never reached pgstore. A bbolt chio.db records the key
// too, but one made with a new key is new itself, and goes with the key
// when a start is refused.
func mayHoldKey(p *policy.Policy, err error) bool {
	return p.Store.Driver == policy.StorePostgres && !errors.Is(err, pgstore.ErrKeyNotRecorded) && !errors.Is(err, errDSNUnset)
}

// errDSNUnset: [store] dsn_env names an unset or empty variable.
var errDSNUnset = errors.New("not set or empty")
