package kernel

// WaitSettles waits for the settle commits of calls answered before them
// (settling.go), so tests can count store updates deterministically.
func (k *Kernel) WaitSettles() { k.settles.Wait() }

// PendingKey names an agent's pending count (pending_cap.go), for tests
// that stage a store written by an older build.
var PendingKey = pendingKey

// BeforeVoteCommit runs hook once, when the next vote has been verified
// and is about to commit (a reload landing there must be honoured).
func (k *Kernel) BeforeVoteCommit(hook func()) { k.beforeVoteCommit.Store(&hook) }

// BeforeReconcileCommit runs hook once, when the next reconcile of a
// pending request with a policy is about to commit (a later reload
// landing there must win).
func (k *Kernel) BeforeReconcileCommit(hook func()) { k.beforeReconcileCommit.Store(&hook) }

// BeforeEscalationCommit runs hook once, when the next escalation has
// read the policy it judges by and is about to commit (a reload landing
// there must be honoured).
func (k *Kernel) BeforeEscalationCommit(hook func()) { k.beforeEscalationCommit.Store(&hook) }

// BeforeTimeoutDenyCommit runs hook once, when the next deadline has
// chosen to deny its request and is about to commit the denial (a reload
// landing there must be honoured).
func (k *Kernel) BeforeTimeoutDenyCommit(hook func()) { k.beforeTimeoutDenyCommit.Store(&hook) }

// FirstNKey names the count of a grant's first-N calls by a subject.
var FirstNKey = firstNKey

// RecoveryAwaitsVote runs hook once, when a recovery worker begins to
// wait for a live vote's resume of the call it was given (recover.go).
func (k *Kernel) RecoveryAwaitsVote(hook func()) { k.recoveryAwaitsVote.Store(&hook) }
