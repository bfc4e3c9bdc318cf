package approval

import (
	"encoding/json"
	"errors"
	"slices"
)

// Request kinds.
const (
	KindToolCall = "tool_call"
	KindConfirm  = "confirm"
	KindQuestion = "question"
)

// Request statuses.
const (
	StatusPending   = "pending"
	StatusApproved  = "approved"
	StatusDenied    = "denied"
	StatusExpired   = "expired"
	StatusCancelled = "cancelled"
)

// Request is SPEC §3's ApprovalRequest plus the kernel's bookkeeping. The
// fields up to Arguments are the wire contract shown to approvers.
type Request struct {
	ApprovalID       string `json:"approval_id"`
	Kind             string `json:"kind"`
	PolicyID         string `json:"policy_id"`
	SubjectID        string `json:"subject_id"`
	CapabilityID     string `json:"capability_id"`
	SubjectPublicKey string `json:"subject_public_key"`
	// SubjectLabel is the agent's name from its signed capability ("" when
	// it has none): what approvers read instead of a key.
	SubjectLabel  string `json:"subject_label,omitempty"`
	ToolServer    string `json:"tool_server"`
	ToolName      string `json:"tool_name"`
	Action        string `json:"action"`
	ParameterHash string `json:"parameter_hash"`
	ExpiresAt     int64  `json:"expires_at"`
	CallbackHint  string `json:"callback_hint,omitempty"`
	CreatedAt     int64  `json:"created_at"`
	Summary       string `json:"summary"`
	// Amount is the money the call moves, read from its arguments where
	// the tool declares it (not the agent's word); nil when it declares none.
	Amount           *Amount         `json:"amount,omitempty"`
	GovernedIntent   json.RawMessage `json:"governed_intent"`
	TrustedApprovers []string        `json:"trusted_approvers"`
	TriggeredBy      []string        `json:"triggered_by"`
	Quorum           int             `json:"quorum"`
	DenyQuorum       int             `json:"deny_quorum"`
	Tier             int             `json:"tier"`
	Status           string          `json:"status"`
	Arguments        json.RawMessage `json:"arguments,omitempty"` // only with expose_arguments
	Questions        json.RawMessage `json:"questions,omitempty"` // kind question
	Channels         []string        `json:"channels"`

	// Progress and links.
	RequestID    string      `json:"request_id"` // the parked tool call
	ReceiptID    string      `json:"receipt_id"` // its incomplete receipt
	Requesters   []string    `json:"requesters,omitempty"`
	Votes        []Vote      `json:"votes"`
	Resolution   *Resolution `json:"resolution,omitempty"`
	NotifyErrors []string    `json:"notify_errors,omitempty"`
	// Notified is Tier+1 once the approvers of the current tier have been
	// announced the request (0: never). A start-up or a healed store
	// announces a pending request that is below it: its park or
	// escalation committed, but the run that made it did not live to say so.
	Notified int `json:"notified,omitempty"`
	// SkippedTiers lists the escalation tiers (0-based, as Tier) the
	// request was passed over without waiting: in each, nobody but the
	// calling agent (or a requester) could vote, so its timeout would only
	// have delayed the tier whose approvers may decide (skipped.go).
	SkippedTiers []int `json:"skipped_tiers,omitempty"`
}

// Vote is one counted approver decision (quorum progress).
type Vote struct {
	Approver    string `json:"approver"`
	DisplayName string `json:"display_name,omitempty"`
	TokenID     string `json:"token_id"`
	Decision    string `json:"decision"`
	Note        string `json:"note,omitempty"`
	Channel     string `json:"channel,omitempty"`
	Custodial   bool   `json:"custodial,omitempty"`
	At          int64  `json:"at"` // unix seconds, like every approval time
	// Token is the signed token exactly as received: the auditor's offline
	// proof that this key decided this request.
	Token json.RawMessage `json:"token"`
}

// AmendedArguments returns the arguments an approving vote amended the
// call to (its signed token's amended_arguments), nil when it amended
// nothing. The tool receives those instead of the request's, so every
// view of the votes (Slack's message, `chio approval show`) shows them.
// The member is read by its exact name, as the verifier reads it.
func (v Vote) AmendedArguments() json.RawMessage {
	if v.Decision != DecisionApproved || len(v.Token) == 0 {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(v.Token, &members) != nil {
		return nil
	}
	a := members["amended_arguments"]
	if len(a) == 0 || string(a) == "null" {
		return nil
	}
	return a
}

// Resolution is how a request ended.
type Resolution struct {
	Outcome string `json:"outcome"` // approved | denied | expired | cancelled
	Reason  string `json:"reason,omitempty"`
	// Guard names what decided the end: "human-approval" for a person,
	// "approval-timeout", or the guard that refused an approved call when
	// it resumed ("capability", "forbidden_paths", …). A guard is not a
	// person: DecidedBy is set only when a human (or, for
	// auto_approve_advisory, the kernel) signed the deciding token.
	Guard     string `json:"guard,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"` // display name, or the key when the approver has none
	// CallStatus is the parked call's final status once it is known:
	// allowed (executed), denied, cancelled; ToolError when it ran and failed.
	CallStatus string `json:"call_status,omitempty"`
	ToolError  string `json:"tool_error,omitempty"`
	At         int64  `json:"resolved_at"` // unix seconds
	ReceiptID  string `json:"receipt_id,omitempty"`
	TokenID    string `json:"token_id,omitempty"`
	// Uncounted names the voters whose votes the decision does not count,
	// as its final receipt's "uncounted" does (the kernel writes both from
	// one rule): a key the deciding policy no longer trusts, or an
	// approval of a question giving other answers than the deciding vote.
	// Progress and UncountedNote leave them out of a resolved request.
	Uncounted []string `json:"uncounted,omitempty"`
}

// Trusts reports whether key is in the request's trusted approver set.
func (r *Request) Trusts(key string) bool {
	for _, k := range r.TrustedApprovers {
		if k == key {
			return true
		}
	}
	return false
}

// MayDecide reports whether a vote signed by key could count on r: key is
// one of its trusted approvers, and neither the calling agent's key (the
// kernel never counts an agent's vote on its own call) nor a requester's,
// as Verify judges a token. What an approver's tools offer to decide.
func (r *Request) MayDecide(key string) bool {
	return r.Trusts(key) && key != r.SubjectID && key != r.SubjectPublicKey && !contains(r.Requesters, key)
}

// Counts returns how many distinct approvers approved and denied.
func (r *Request) Counts() (approved, denied int) {
	for _, v := range r.Votes {
		if v.Decision == DecisionApproved {
			approved++
		} else {
			denied++
		}
	}
	return
}

// CountsAmong counts distinct approvers who approved and denied, among
// the keys in trusted only (a key no longer trusted no longer counts).
func (r *Request) CountsAmong(trusted []string) (approved, denied int) {
	for _, v := range r.Votes {
		if !slices.Contains(trusted, v.Approver) {
			continue
		}
		if v.Decision == DecisionApproved {
			approved++
		} else {
			denied++
		}
	}
	return
}

// Progress counts approvals and denials as the kernel does, for showing
// "N of M": while the request is pending, only the votes of approvers it
// trusts now (a reload that removes an approver keeps their vote on the
// request but stops counting it, and rewrites TrustedApprovers); once it
// is resolved, every recorded vote (the kernel's advisory vote included)
// but those its decision does not count (Resolution.Uncounted, as its
// receipt names them). The approvals of a pending question are its
// largest set of counted ones giving the same answers (LeadingApprovals):
// only such a set decides it.
func (r *Request) Progress() (approved, denied int) {
	if r.Status == StatusPending {
		_, denied = r.CountsAmong(r.TrustedApprovers)
		return r.LeadingApprovals(r.TrustedApprovers), denied
	}
	for i := range r.Votes {
		switch v := &r.Votes[i]; {
		case r.uncountedByDecision(v):
		case v.Decision == DecisionApproved:
			approved++
		default:
			denied++
		}
	}
	return approved, denied
}

// uncountedByDecision reports whether v is a vote on resolved r that its
// decision does not count (Resolution.Uncounted).
func (r *Request) uncountedByDecision(v *Vote) bool {
	return r.Status != StatusPending && r.Resolution != nil && slices.Contains(r.Resolution.Uncounted, v.Approver)
}

// HasVoted reports whether approver already has a counted vote.
func (r *Request) HasVoted(approver string) bool {
	for _, v := range r.Votes {
		if v.Approver == approver {
			return true
		}
	}
	return false
}

// DeniedByAnyone reports whether any recorded vote is a denial.
func (r *Request) DeniedByAnyone() bool {
	for _, v := range r.Votes {
		if v.Decision == DecisionDenied {
			return true
		}
	}
	return false
}

// ErrNotPending is returned for a request that is already resolved.
var ErrNotPending = errors.New("approval request is not pending")
