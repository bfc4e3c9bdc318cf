package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"syscall"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// restartSettings are the [kernel], [channels], [receipts] and [store]
// tables as the policy file had them when chiod started, before -listen and
// -data-dir: a reloaded file is compared with them to tell the operator what
// awaits a restart.
type restartSettings struct {
	kernel   policy.Kernel
	channels policy.Channels
	receipts policy.Receipts
	store    policy.StoreConfig
}

func restartSettingsOf(p *policy.Policy) restartSettings {
	return restartSettings{kernel: p.Kernel, channels: p.Channels, receipts: p.Receipts, store: p.Store}
}

// watchReload re-reads the policy on SIGHUP. A valid file replaces the
// policy in force (later decisions, and approvals resumed later, use it);
// an invalid one is logged and changes nothing. [kernel] (but
// max_pending_approvals_per_agent), [channels], [receipts] and [store]
// settings need a restart: they are kept from the running policy. A change to how [[servers]] are reached, or to
// authority_key, refuses the reload (serversReachedAlike,
// authorityKeptAlike). reloaded runs after each reload that put a new
// policy in force. hup is catchHUP's: a SIGHUP that came while chiod was
// starting is waiting there, and reloads now.
func watchReload(hup <-chan os.Signal, path string, k *kernel.Kernel, started restartSettings, log *slog.Logger, reloaded func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				if reload(path, k, started, log) && reloaded != nil {
					reloaded()
				}
			}
		}
	}()
	return func() { close(done) }
}

// catchHUP takes SIGHUP from its default action (ending the process)
// before chiod writes its pid file: `kill -HUP $(cat chiod.pid)` or
// `systemctl reload` while chiod is still starting would otherwise kill
// it halfway, leaving the key, tokens and pid file of a start it never
// finished or undid. One signal is kept for watchReload; stop restores
// the default once chiod returns.
func catchHUP() (hup chan os.Signal, stop func()) {
	hup = make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// reload reports whether it put the file's policy in force.
func reload(path string, k *kernel.Kernel, started restartSettings, log *slog.Logger) bool {
	next, err := loadPolicy(path)
	if err != nil {
		log.Error("policy reload refused; keeping the policy in force", "err", err)
		return false
	}
	changed, err := keepRestartSettings(next, k.Policy(), started)
	if err == nil {
		err = kernelKeyNotApprover(next, k.PublicKey())
	}
	if err != nil {
		log.Error("policy reload refused; keeping the policy in force", "err", err)
		return false
	}
	if changed {
		log.Warn("policy file's [kernel], [channels], [receipts] or [store] differ from those chiod started with; " +
			"they take effect only after a restart, the running ones are kept (but [kernel] max_pending_approvals_per_agent, which this reload applies)")
	}
	// Pending approvals are reconciled with the new approvers: a key removed
	// from a grant stops counting at once.
	// The policy is in force either way; the error names the requests
	// not reconciled with it yet (retried once the store answers).
	if err := k.ApplyPolicy(context.Background(), next); err != nil {
		log.Error("policy reloaded, but reconciling pending approvals with it failed for some; they are retried", "err", err)
	}
	log.Info("policy reloaded ([kernel] changes but max_pending_approvals_per_agent, and [channels], [receipts] and [store] changes, take effect at restart)",
		"policy_hash", next.Hash)
	return true
}

// keepRestartSettings puts the running policy's [kernel], [channels],
// [receipts] and [store] into next, a freshly loaded policy not yet in
// force: the listener, TLS, data dir, public URL (callback hints, the
// session cookie's Secure flag), authority key, channels, the receipt log's
// checkpointing and the store were set up at start, with -listen and
// -data-dir applied, and a reload does not rebuild them. The file's
// max_pending_approvals_per_agent is kept in next (see below). changed
// reports whether the file's tables differ from those chiod started with.
//
// A grant that names a channel the running chiod has not configured is an
// error (nothing changes): its requests would reach nobody on that channel
// until a restart. So is a [[servers]] change the dispatcher cannot take
// (serversReachedAlike): calls would keep going where they went before;
// and a changed authority_key (authorityKeptAlike).
// next.Hash stays the hash of the file as read, as at start (where -listen
// and -data-dir are not hashed either), so receipts match `chio policy
// check` of the file.
func keepRestartSettings(next, running *policy.Policy, started restartSettings) (changed bool, err error) {
	// max_pending_approvals_per_agent is the one [kernel] setting a reload
	// applies: the kernel reads it from the policy in force at each park
	// (nothing is built from it at start), and the cap's deny receipts
	// carry this file's hash, so the file's value is the one enforced.
	kernelAtStart := started.kernel
	kernelAtStart.MaxPendingApprovalsPerAgent = next.Kernel.MaxPendingApprovalsPerAgent
	changed = !reflect.DeepEqual(next.Kernel, kernelAtStart) || !reflect.DeepEqual(next.Channels, started.channels) ||
		next.Receipts != started.receipts || next.Store != started.store
	if err := serversReachedAlike(next.Servers, running.Servers); err != nil {
		return changed, err
	}
	if err := authorityKeptAlike(next.Kernel, running.Kernel); err != nil {
		return changed, err
	}
	if err := channelsConfigured(next, running.Channels); err != nil {
		return changed, err
	}
	capInFile := next.Kernel.MaxPendingApprovalsPerAgent
	next.Kernel, next.Channels = running.Kernel, running.Channels
	next.Kernel.MaxPendingApprovalsPerAgent = capInFile
	next.Receipts, next.Store = running.Receipts, running.Store
	return changed, nil
}

// channelsConfigured checks that every channel next's approvals name (tiers
// included) is one c configures, as policy validation does against the
// file's own [channels].
func channelsConfigured(next *policy.Policy, c policy.Channels) error {
	configured := map[string]bool{
		"webhook": c.Webhook != nil, "slack": c.Slack != nil, "email": c.Email != nil,
		"dashboard": c.Dashboard.Enabled,    // never nil after policy.Parse (defaults)
		"poll":      true, "terminal": true, // pull-based: always served
	}
	for i := range next.Grants {
		a := next.Grants[i].Approval
		if a == nil {
			continue
		}
		lists := [][]string{a.Channels}
		if a.Escalation != nil {
			for _, t := range a.Escalation.Tiers {
				lists = append(lists, t.Channels)
			}
		}
		for _, list := range lists {
			for _, ch := range list {
				if !configured[ch] {
					return fmt.Errorf("grant %q uses channel %q, which the running chiod has not configured "+
						"([channels] changes take effect at restart): restart chiod to apply this policy", next.Grants[i].ID, ch)
				}
			}
		}
	}
	return nil
}

// authorityKeptAlike refuses a reload whose [kernel] authority_key differs
// from the one in force. The kernel's trusted keys are fixed at start, so
// such a policy would be in force (its policy_hash on every receipt) while
// the kernel honoured the capabilities of a key it does not name (a leaked
// key removed from the file), or refused those of one it names. Unlike
// the rest of [kernel] (where chiod listens, stores, links), the key is
// who may authorise calls: kept silently, the file would say something
// other than what is enforced.
func authorityKeptAlike(next, running policy.Kernel) error {
	if next.AuthorityKey == running.AuthorityKey {
		return nil
	}
	return fmt.Errorf("[kernel] authority_key changed (%s → %s), but chiod fixes the keys it trusts at start: "+
		"capabilities would still be accepted as before under the new policy's hash; restart chiod to apply this policy",
		orNone(running.AuthorityKey), orNone(next.AuthorityKey))
}

func orNone(key string) string {
	if key == "" {
		return "none"
	}
	return key
}
