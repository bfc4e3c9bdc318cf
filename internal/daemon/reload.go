package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// watchReload re-reads the policy on SIGHUP. A valid file replaces the
// policy in force (later decisions, and approvals resumed later, use it);
// an invalid one is logged and changes nothing. [kernel] and [channels]
// settings need a restart: they are kept from the running policy.
func watchReload(path string, k *kernel.Kernel, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				next, err := policy.Load(path)
				if err != nil {
					log.Error("policy reload refused; keeping the policy in force", "err", err)
					continue
				}
				// Pending approvals are reconciled with the new approvers: a
				// key removed from a grant stops counting at once.
				if err := k.ApplyPolicy(context.Background(), next); err != nil {
					log.Error("reconciling pending approvals with the reloaded policy failed", "err", err)
				}
				log.Info("policy reloaded ([kernel] and [channels] changes take effect at restart)", "policy_hash", next.Hash)
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}
