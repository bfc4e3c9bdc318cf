package synth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
)

// Options are chio-gen's flags.
type Options struct {
	Dir      string
	Receipts int
	Days     int
	Seed     uint64
}

// WriteDataDir creates a chiod data directory: a fresh kernel key
// (kernel.pem), the store (chio.db) with the generated log, and a policy
// (chio.toml) that matches it. It refuses to touch an existing store.
func WriteDataDir(ctx context.Context, o Options, progress io.Writer) error {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	dbPath := filepath.Join(o.Dir, "chio.db")
	if _, err := os.Stat(dbPath); err == nil {
		return fmt.Errorf("%s exists: chio-gen writes only into a fresh data directory", dbPath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := keys.Generate(rand.Reader)
	if err != nil {
		return err
	}
	if err := keys.WritePrivateKey(filepath.Join(o.Dir, "kernel.pem"), key); err != nil {
		return err
	}
	abs, _ := filepath.Abs(o.Dir)
	if err := os.WriteFile(filepath.Join(o.Dir, "chio.toml"), []byte(Policy(o.Seed, abs)), 0o600); err != nil {
		return err
	}
	s, err := boltstore.Open(dbPath, key, boltstore.Options{})
	if err != nil {
		return err
	}
	start := time.Now()
	sum, err := Generate(ctx, s, key, Config{Receipts: o.Receipts, Days: o.Days, Seed: o.Seed})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "wrote %d receipts in %s to %s (kernel key %s)\n", sum.Receipts, time.Since(start).Round(time.Millisecond), dbPath, key.Public())
	fmt.Fprintf(progress, "  %d allowed, %d denied by guards, %d batch-approved, %d approval chains: %d approved, %d denied by a human, %d timed out, %d auto-approved, %d still pending\n",
		sum.Allowed, sum.Denied, sum.Batched, sum.Chains, sum.HumanApproved, sum.HumanDenied, sum.TimedOut, sum.AutoApproved, sum.Pending)
	fmt.Fprintf(progress, "serve it:  chiod -config %s -data-dir %s\n", filepath.Join(o.Dir, "chio.toml"), o.Dir)
	return nil
}
