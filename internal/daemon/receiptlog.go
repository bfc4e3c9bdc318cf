package daemon

// The Merkle log over the receipts and its checkpointing.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// newReceiptLog is the Merkle log over the receipts, checkpointed per
// [receipts] checkpoint_every / checkpoint_interval_seconds. The store loads
// it when it opens and feeds it every commit.
func newReceiptLog(p *policy.Policy, key keys.PrivateKey, clk clock.Clock, log *slog.Logger) *receipt.Log {
	if clk == nil {
		clk = clock.Real{}
	}
	return receipt.NewLog(key, receipt.LogOptions{
		Every:    uint64(p.Receipts.CheckpointEvery),
		Interval: time.Duration(p.Receipts.CheckpointIntervalSeconds) * time.Second,
		Now:      clk.Now,
		OnError:  func(err error) { log.Error("checkpoint failed", "err", err) },
	})
}

// startReceiptLog checks the store's leaves against the latest signed
// checkpoint (a store that no longer matches what the kernel signed refuses
// to start: fail closed) and starts the checkpoint signer. The returned stop
// signs a final checkpoint.
func startReceiptLog(ctx context.Context, l *receipt.Log, store receipt.CheckpointStore) (func(), error) {
	if err := l.Start(ctx, store); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Close(sctx)
	}, nil
}
