package kernel

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/uuid/v5"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Observer receives decision metrics; nil means none. Decision is called
// once per call this kernel decided (allowed, denied or pending_approval),
// an allow whose outcome is not recorded yet (ErrOutcomeUnknown after the
// allow was durable) included, never for a duplicate answered from the
// record, nor for a call another kernel sharing the store decided first.
type Observer interface {
	Decision(verdict string, d time.Duration)
}

// Config constructs a Kernel. Key, Policy, Store and Dispatcher are required.
type Config struct {
	Key        keys.PrivateKey
	Policy     *policy.Policy
	Store      Store
	Dispatcher Dispatcher
	Clock      clock.Clock // nil: clock.Real
	// Authorities are extra keys whose capabilities are accepted besides Key.
	Authorities []keys.PublicKey
	// Guards run after the built-in guards (custom checks).
	Guards   []Guard
	Observer Observer
	// Notifier is told about approval requests after they are durable.
	Notifier Notifier
	// Stopwatch measures guard run time; nil uses a monotonic clock.
	Stopwatch func() time.Duration
	// ReplayCacheSize sizes the consumed-token LRU; 0 = ConsumedCacheSize.
	ReplayCacheSize int
	// Schemas validates amended arguments against tools' input schemas;
	// nil: no tool declares one.
	Schemas SchemaValidator
	// Relay carries events to the other replicas sharing Store (bus.go);
	// nil: the store is this kernel's alone.
	Relay EventRelay
	// MaxCallsInFlightPerAgent bounds one agent's calls running at once
	// (calls_inflight.go); 0 = DefaultMaxCallsInFlightPerAgent.
	MaxCallsInFlightPerAgent int
}

// Kernel decides tool calls. It is safe for concurrent use.
type Kernel struct {
	key        keys.PrivateKey
	pub        keys.PublicKey
	pubText    string // pub.String(), spelled once: decide compares every call's issuer with it
	trusted    []keys.PublicKey
	store      Store
	dispatcher Dispatcher
	clock      clock.Clock
	observer   Observer
	policy     atomic.Pointer[policy.Policy]
	// policyMu orders policy swaps (SetPolicy, write) against the commits
	// judged by the policy (a vote, an allow decision: read): a reload
	// lands before such a judgement or after its commit returns, never
	// between the two. Nothing holding it may call SetPolicy.
	policyMu sync.RWMutex
	pipeline *Pipeline
	caps     *lru.Cache[[32]byte, verifiedCap]
	// verifyKeys holds agents' precomputed proof-verification keys
	// (verify.go), by public key.
	verifyKeys *lru.Cache[[32]byte, verifyKey]
	inflight   sync.Map // request_id → *firstSubmit, while its first Submit runs
	// calls counts each agent's Submits running, at most maxCalls
	// (calls_inflight.go).
	calls      callsInFlight
	maxCalls   int
	announcing sync.Map // approval id → tier: announceDurably is telling that tier's approvers
	rate       *rateWindow
	events     *broker
	notifier   Notifier
	timersMu   sync.Mutex
	timers     map[string]clock.Timer
	// consumed caches spent token ids in front of the durable consumed set
	// (the authority): an eviction or restart only costs a store read.
	consumed *lru.Cache[string, struct{}]
	// delivering holds request ids being sent right now, so recovery never
	// sends a call a live path is sending; unsettled holds tool answers
	// whose commit failed (request id → settlement), for recovery to record.
	delivering sync.Map
	unsettled  sync.Map
	// uncertain holds request ids whose allow decision's commit was
	// reported failed but may be durable, or whose recovery failed, each
	// with the id of that decision's receipt, or approved calls whose
	// resume failed, with "" (recover.go uncertainCalls).
	uncertain sync.Map
	// lostVotes holds votes whose commit was reported failed but may be
	// durable and that approve nothing (a denial, a vote below the quorum):
	// token id → lostVote, until a read tells them told or never recorded
	// (lost_votes.go).
	lostVotes sync.Map
	// lostEndings holds endings (a cancel, a deadline's denial, a reload's
	// end) whose commit was reported failed but may be durable: approval
	// id → the receipt id that commit chained (lost_endings.go).
	lostEndings sync.Map
	// lostClaimUntil: until then (unix ns, the kernel's clock) each sweep
	// also looks through this kernel's own calls in flight, because a
	// ClaimOrphans failed and may have committed (recover.go ownStranded).
	lostClaimUntil atomic.Int64
	// unsent: calls whose allow decision this kernel took and whose
	// commit was reported failed but may be durable: request id → that
	// decision's receipt id. Nothing is sent before its decision commits,
	// so recovery sends such an at_most_once call once rather than
	// settling it "unknown" (recover.go).
	unsent sync.Map
	// unreconciled: a reload's reconcile of a pending request failed with
	// the store; the replica sweep reconciles every pending request with
	// the policy in force again (approvers.go reconcileAgain).
	unreconciled atomic.Bool
	// voting holds the approval ids of votes being recorded and resumed
	// right now, so recovery never takes an approved call a live resume
	// is about to decide (live_votes.go).
	voting liveVotes
	// arrivals holds the votes being presented right now with the time
	// they are judged at, so a deadline's action waits for those that
	// arrived before it (arrivals.go).
	arrivals arrivals
	// settling holds calls answered before their settle commit finished
	// (request id → settled *CallRecord); settles counts those commits
	// (settling.go).
	settling sync.Map
	settles  sync.WaitGroup
	settleMu sync.RWMutex // orders settles.Add before Close's Wait
	recovery recoveryState
	schemas  SchemaValidator
	// stop is closed by Close: deliveries stop retrying and leave their
	// calls in flight for the next start instead of recording a failure.
	stop     chan struct{}
	stopOnce sync.Once
	// stopped is cancelled with stop: a delivery attempt's context hangs
	// on it without a goroutine of its own (dispatch_cut.go).
	stopped    context.Context
	cancelStop context.CancelFunc
	sweepOnce  sync.Once // replica.go
	// beforeVoteCommit, set only by tests (export_test.go), runs once a
	// vote was verified, before its commit is judged.
	beforeVoteCommit atomic.Pointer[func()]
	// beforeReconcileCommit, set only by tests (export_test.go), runs once
	// a reload's reconcile of a request is about to commit.
	beforeReconcileCommit atomic.Pointer[func()]
	// beforeEscalationCommit, set only by tests (export_test.go), runs
	// once an escalation has read the policy it judges by, before it
	// commits.
	beforeEscalationCommit atomic.Pointer[func()]
	// beforeTimeoutDenyCommit, set only by tests (export_test.go), runs
	// once a deadline has chosen to deny, before the denial commits.
	beforeTimeoutDenyCommit atomic.Pointer[func()]
	// recoveryAwaitsVote, set only by tests (export_test.go), runs once a
	// recovery worker waits for a live vote's resume (recover.go).
	recoveryAwaitsVote atomic.Pointer[func()]
}

type verifiedCap struct {
	cap     *Capability
	subject keys.PublicKey
	// subjectText is subject.String(), written once when the capability
	// is verified (the capability cache keeps it) rather than per call.
	subjectText string
}

// Outcome is the kernel's answer to a call.
type Outcome struct {
	Status    string          `json:"status"`
	RequestID string          `json:"request_id"`
	ReceiptID string          `json:"receipt_id"`
	Output    json.RawMessage `json:"output,omitempty"`
	ToolError string          `json:"tool_error,omitempty"`
	// Execution says what happened at the tool once an allowed call is
	// settled: succeeded | tool_error | not_delivered | unknown.
	Execution         string `json:"execution,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Guard             string `json:"guard,omitempty"`
	ApprovalRequestID string `json:"approval_request_id,omitempty"`
	Deadline          int64  `json:"deadline,omitempty"`
	Summary           string `json:"summary,omitempty"`
}

// New validates cfg and builds a Kernel.
func New(cfg Config) (*Kernel, error) {
	if cfg.Policy == nil || cfg.Store == nil || cfg.Dispatcher == nil {
		return nil, errors.New("kernel: Policy, Store and Dispatcher are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Stopwatch == nil {
		base := time.Now()
		cfg.Stopwatch = func() time.Duration { return time.Since(base) }
	}
	caps, _ := lru.New[[32]byte, verifiedCap](CapabilityCacheSize)
	verifyKeys, _ := lru.New[[32]byte, verifyKey](VerifyKeyCacheSize)
	if cfg.ReplayCacheSize <= 0 {
		cfg.ReplayCacheSize = ConsumedCacheSize
	}
	consumed, _ := lru.New[string, struct{}](cfg.ReplayCacheSize)
	if cfg.MaxCallsInFlightPerAgent <= 0 {
		cfg.MaxCallsInFlightPerAgent = DefaultMaxCallsInFlightPerAgent
	}
	k := &Kernel{
		key: cfg.Key, pub: cfg.Key.Public(), pubText: cfg.Key.Public().String(), store: cfg.Store, dispatcher: cfg.Dispatcher,
		clock: cfg.Clock, observer: cfg.Observer, caps: caps, verifyKeys: verifyKeys, rate: newRateWindow(),
		events: newBroker(), notifier: cfg.Notifier, timers: map[string]clock.Timer{}, consumed: consumed, schemas: cfg.Schemas, stop: make(chan struct{}),
		maxCalls: cfg.MaxCallsInFlightPerAgent,
		trusted:  append([]keys.PublicKey{cfg.Key.Public()}, cfg.Authorities...),
		pipeline: &Pipeline{
			Guards: append(BuiltinGuards(), cfg.Guards...), Budget: GuardBudget, Stopwatch: cfg.Stopwatch,
		},
	}
	k.stopped, k.cancelStop = context.WithCancel(context.Background())
	k.events.relay = cfg.Relay
	k.policy.Store(cfg.Policy)
	return k, nil
}

// Close stops retries and recovery from starting new work: a delivery that
// fails from now on leaves its call in flight (durably dispatching) for the
// next start, rather than recording a failure caused by the shutdown.
// It then waits, at most SettleDrainTimeout, for the settle commits of
// calls already answered (settling.go). Call it before closing the
// Dispatcher and the Store.
func (k *Kernel) Close() {
	k.settleMu.Lock() // no background settle starts after this (settling.go)
	k.stopOnce.Do(func() { close(k.stop); k.cancelStop() })
	k.settleMu.Unlock()
	k.stopTimers()
	drained, late := make(chan struct{}), make(chan struct{})
	go func() { k.settles.Wait(); close(drained) }()
	t := k.clock.AfterFunc(SettleDrainTimeout, func() { close(late) })
	defer t.Stop()
	select {
	case <-drained:
	case <-late:
		slog.Warn("shutting down with settle commits still running; recovery finishes those calls at the next start")
	}
}

func (k *Kernel) stopping() bool {
	select {
	case <-k.stop:
		return true
	default:
		return false
	}
}

// PublicKey is the kernel's receipt-signing key.
func (k *Kernel) PublicKey() keys.PublicKey { return k.pub }

// Clock returns the kernel's clock.
func (k *Kernel) Clock() clock.Clock { return k.clock }

// IssueCapability signs a capability with the kernel key.
func (k *Kernel) IssueCapability(subject keys.PublicKey, grants []string, ttl time.Duration) ([]byte, *Capability, error) {
	return k.IssueLabeledCapability(subject, "", grants, ttl)
}

// IssueLabeledCapability signs a capability whose label names the agent
// for approvers.
func (k *Kernel) IssueLabeledCapability(subject keys.PublicKey, label string, grants []string, ttl time.Duration) ([]byte, *Capability, error) {
	p := k.Policy()
	for _, g := range grants {
		if _, ok := p.Grant(g); !ok {
			return nil, nil, fmt.Errorf("%w: unknown grant %q", ErrCapabilityInvalid, g)
		}
	}
	return IssueLabeledCapability(k.key, subject, label, grants, k.clock.Now(), ttl)
}

// Revoke durably revokes a capability id; later calls under it are denied.
func (k *Kernel) Revoke(ctx context.Context, capabilityID string) error {
	// Only an id a capability can have (ParseCapability refuses the rest):
	// the same answer on every store. bbolt kept any bytes as revoked,
	// while PostgreSQL text holds no NUL or invalid UTF-8 and failed.
	if !validCapabilityID(capabilityID) {
		return fmt.Errorf("%w: bad capability id: must be %s", ErrBadCall, approval.IDRule)
	}
	now := k.clock.Now().UnixMilli()
	// An operator's revocation is the answer to a flooding agent: it waits
	// out a full commit queue (back-pressure) rather than being refused.
	err := k.updateAfterVote(ctx, func(tx Tx) error { return tx.Revoke(capabilityID, now) })
	if mayHaveCommitted(err) {
		// Never "nothing was written" when it may be: revoking again is
		// safe (the first revocation time stands).
		return fmt.Errorf("%w: capability %s may or may not be revoked: its commit failed and may have reached the disk "+
			"(revoke it again): %w", ErrOutcomeUnknown, capabilityID, err)
	}
	return err
}

func (k *Kernel) newReceipt(rec *CallRecord, p *policy.Policy, d receipt.Decision, meta map[string]any, at time.Time) *receipt.Receipt {
	if meta == nil {
		meta = map[string]any{}
	}
	return &receipt.Receipt{
		ID: NewID("rc-"), Timestamp: at.UnixMilli(), RequestID: rec.RequestID, CapabilityID: rec.CapabilityID,
		Subject: rec.Subject, ToolServer: rec.Server, ToolName: rec.Tool, Action: rec.Action,
		ParameterHash: rec.ParameterHash, Decision: d, Metadata: meta, PolicyHash: p.Hash,
	}
}

// NewID returns prefix + a UUIDv7 (time-ordered), in its canonical
// lower-case 8-4-4-4-12 text, written in one allocation.
func NewID(prefix string) string {
	u := uuid.Must(uuid.NewV7())
	var buf [64]byte
	b := append(buf[:0], prefix...)
	b = hex.AppendEncode(b, u[0:4])
	for _, part := range [][2]int{{4, 6}, {6, 8}, {8, 10}, {10, 16}} {
		b = append(b, '-')
		b = hex.AppendEncode(b, u[part[0]:part[1]])
	}
	return string(b)
}

func firstNKey(grant, subject string) string { return "firstn\x00" + grant + "\x00" + subject }

func (k *Kernel) tracksFirstN(grantID string) bool {
	g, ok := k.Policy().Grant(grantID)
	return ok && g.Constraints.RequireApprovalFirstN > 0
}

// firstNCount reads the durable count of a grant's first-N calls by a
// subject. It is read from the store every time, never cached: a cached
// count is wrong as soon as another kernel sharing the store counts a
// call, and the guard decides from it whether a human is asked. A count
// that cannot be read is 0: the call asks a human (fail closed).
func (k *Kernel) firstNCount(key string) uint64 {
	var n uint64
	if err := k.store.View(func(tx ReadTx) error {
		var err error
		n, err = tx.Counter(key)
		return err
	}); err != nil {
		return 0
	}
	return n
}
