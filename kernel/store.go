package kernel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/receipt"
)

// Store errors callers branch on.
var (
	ErrNotFound    = errors.New("not found")
	ErrQueueFull   = errors.New("commit queue full")
	ErrUnavailable = errors.New("store unavailable")
	ErrConflict    = errors.New("conflicting state")
	// ErrOutcomeUnknown: the call's allow decision is durable and it may
	// have reached its tool, but its outcome is not recorded yet (the
	// store failed at the settle commit, or chiod is stopping). Never
	// "unavailable", which tells a client that nothing was allowed: a
	// client retries under the SAME request id or awaits it.
	ErrOutcomeUnknown = errors.New("the call's outcome is not recorded yet; it may have run")
	// ErrNotCommitted marks a store refusal made before anything was
	// written (a store already failed or closed): unlike other
	// ErrUnavailable failures of a commit, it certainly did not commit.
	ErrNotCommitted = errors.New("nothing was written")
)

// Call statuses as seen by GET /v1/calls/{id}.
const (
	StatusAllowed         = "allowed"          // executed; Output is set
	StatusDenied          = "denied"           // by a guard, a human or a timeout
	StatusPendingApproval = "pending_approval" // parked, waiting for a human
	// StatusDispatching: allowed or approved, not yet settled. With
	// DecisionReceiptID set the allow receipt is durable and the tool may
	// have seen the call; without it (an approval whose resume checks have
	// not run yet) nothing has been sent.
	StatusDispatching = "dispatching"
	StatusCancelled   = "cancelled"
)

// InFlight reports whether a call in this status has not ended yet: it
// waits for a human (pending_approval) or for its delivery (dispatching).
func InFlight(status string) bool {
	return status == StatusPendingApproval || status == StatusDispatching
}

// Executions say what became of an allowed call at the tool
// (CallRecord.Execution, Outcome.Execution).
const (
	ExecutionSucceeded    = "succeeded"
	ExecutionToolError    = "tool_error"    // the tool ran and reported a failure
	ExecutionNotDelivered = "not_delivered" // the tool certainly never saw the call
	ExecutionUnknown      = "unknown"       // the tool may or may not have run it
)

// The tool_error of a call without a result that the tool did not give:
// these prefixes, then why (kernel/deliver.go settlementOf). Readers of a
// record that carries no execution field (an approval's resolution) tell
// the three cases apart by them.
const (
	ToolErrorNotDelivered = "not delivered: "
	ToolErrorUnknown      = "outcome unknown: "
)

// CallRecord is the durable state of one tool call, keyed by request_id. It
// is what makes request ids single-use and what long-pollers read.
type CallRecord struct {
	RequestID    string `json:"request_id"`
	Subject      string `json:"subject"`
	CapabilityID string `json:"capability_id"`
	// CapabilityExpiresAt is re-checked when an approved call resumes.
	CapabilityExpiresAt int64 `json:"capability_expires_at"`
	// CapabilityIssuer is the capability's issuer when it is an authority
	// key rather than this kernel's own (empty otherwise, and in records
	// written before it existed): an approved call resumes only while the
	// kernel still trusts it (a restart may have dropped authority_key).
	CapabilityIssuer string `json:"capability_issuer,omitempty"`
	// CapabilityGrants are the capability's grant ids, kept on calls that
	// are parked for approval (empty otherwise, and in records written
	// before it existed): the resume checks that, under the policy then in
	// force, GrantID is still the grant that judges the call.
	CapabilityGrants []string `json:"capability_grants,omitempty"`
	SubjectLabel     string   `json:"subject_label,omitempty"` // the capability's label
	GrantID          string   `json:"grant_id,omitempty"`
	Server           string   `json:"server"`
	Tool             string   `json:"tool"`
	Operation        string   `json:"operation"`
	Action           string   `json:"action"`
	ParameterHash    string   `json:"parameter_hash"`
	// RequestedParameterHash is the parameter_hash the agent's proof
	// covered, kept when an approver's amendment replaced ParameterHash:
	// the agent's idempotent retry of its own call is matched against it.
	RequestedParameterHash string          `json:"requested_parameter_hash,omitempty"`
	Arguments              json.RawMessage `json:"arguments"`
	Intent                 json.RawMessage `json:"governed_intent,omitempty"`
	Status                 string          `json:"status"`
	Reason                 string          `json:"reason,omitempty"`
	Guard                  string          `json:"guard,omitempty"`
	ApprovalID             string          `json:"approval_request_id,omitempty"`
	ReceiptID              string          `json:"receipt_id"` // latest receipt
	Output                 json.RawMessage `json:"output,omitempty"`
	ToolError              string          `json:"tool_error,omitempty"`
	CreatedAt              int64           `json:"created_at"` // unix ms
	UpdatedAt              int64           `json:"updated_at"` // unix ms

	// Write-ahead dispatch. DecisionReceiptID is the allow receipt made
	// durable before the tool saw the call; Delivery is the tool's declared
	// semantics, fixed at that moment; Execution and Attempts are filled
	// in when the call settles.
	DecisionReceiptID string `json:"decision_receipt_id,omitempty"`
	Delivery          string `json:"delivery,omitempty"`
	Execution         string `json:"execution,omitempty"`
	Attempts          int    `json:"attempts,omitempty"`
}

// ReadTx is a read view of the store. Every read sees committed state; a
// store shared by replicas may answer each read from its own snapshot
// (checks that need several reads to agree run inside Update).
type ReadTx interface {
	Call(requestID string) (*CallRecord, error)
	Revoked(capabilityID string) (bool, error)
	Counter(key string) (uint64, error)
	Receipt(id string) ([]byte, error)
	// Receipts calls fn for stored receipts with seq in [from, to], ascending;
	// fn returns false to stop.
	Receipts(from, to uint64, fn func(seq uint64, raw []byte) bool) error
	LastSeq() uint64

	Approval(id string) (*approval.Request, error)
	// PendingApprovals visits pending requests oldest first; fn returns
	// false to stop.
	PendingApprovals(fn func(*approval.Request) bool) error
	Consumed(tokenID string) (bool, error)
	Batch(id string) (*approval.Batch, error)
	// Batches visits every stored standing approval whose id sorts after
	// after ("" for all), in id order; fn returns false to stop.
	Batches(after string, fn func(*approval.Batch) bool) error
	// LiveBatches visits, in id order as Batches does, the batches Live at
	// unix second now (approval.Batch.Live) and reads no other: batches
	// are kept forever (receipts name them), so what the allow path pays
	// must not grow with the expired, revoked and used-up ones. fn returns
	// false to stop.
	LiveBatches(now int64, fn func(*approval.Batch) bool) error
	// Dispatching visits calls approved but not yet recorded as executed
	// (a crash between the two is recovered at start-up).
	Dispatching(fn func(*CallRecord) bool) error
}

// Tx is a read-write view inside one group commit. Its functions must only
// change the store through Tx: the committer may run them again if another
// function in the same batch fails, or if a store shared by replicas has to
// retry the transaction. What a function reads through Tx stays as read
// until the commit (a shared store locks it), so checks made inside the
// function hold when it commits.
type Tx interface {
	ReadTx
	PutCall(*CallRecord) error
	Revoke(capabilityID string, atMillis int64) error
	SetCounter(key string, v uint64) error
	// AppendReceipt adds r to the commit; the committer assigns r.Seq (in
	// commit order: a store shared by replicas numbers receipts only when
	// it commits), signs it with the kernel key and stores it in the same
	// durable commit. After Update returns nil, r.Seq is set and the
	// Appended holds the stored bytes.
	AppendReceipt(r *receipt.Receipt) *Appended
	PutApproval(*approval.Request) error
	// Consume marks a token used; approval.ErrReplay if it already was.
	Consume(tokenID, approvalID string) error
	PutBatch(*approval.Batch) error
}

// Appended is filled in when the commit that carries the receipt is durable.
type Appended struct {
	Receipt *receipt.Receipt
	Raw     []byte
}

// Store is the durable state behind the kernel. Update runs fn inside a
// group commit and returns only once that commit is fsync'd (or failed).
type Store interface {
	Update(ctx context.Context, fn func(Tx) error) error
	View(fn func(ReadTx) error) error
	Close() error
}

// CounterScanner is a store that lists its counters by key prefix, from
// committed state (both stores are). Recover uses it to reset counts that
// nothing waiting backs any more (pending_cap.go).
type CounterScanner interface {
	CountersWithPrefix(prefix string, fn func(key string, v uint64) bool) error
}
