package kernel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chiokernel/chio/policy"
)

// Verdict is a guard's answer. PendingApproval is runtime-only: it is never
// signed into a receipt (a suspended call is signed as incomplete).
type Verdict int

const (
	Allow Verdict = iota
	Deny
	PendingApproval
)

func (v Verdict) String() string {
	return [...]string{"allow", "deny", "pending_approval"}[v]
}

// Result is one guard's answer with its reason.
type Result struct {
	Verdict Verdict
	Guard   string
	Reason  string
}

// Request is everything a guard may look at. It is built once per call with
// ONE reference time; guards never read a clock.
type Request struct {
	Policy     *policy.Policy
	Grant      *policy.Grant // nil: no grant of the capability covers the call
	Tool       *policy.Tool
	Call       *ToolCall
	Operation  string
	Subject    string
	Intent     *GovernedIntent
	Now        time.Time
	PriorCalls uint64 // committed non-denied calls by Subject under Grant
	// RecentCalls counts calls by Subject under Grant in the last minute,
	// this one included (0 when the grant sets no rate limit).
	RecentCalls int
	// HumanAnswered names the guards a human approver has answered (on
	// resume: the request's triggers). A guard the grant routes to a human
	// (on_trigger = "require_approval") that is named here does not deny
	// again; every other deny stands.
	HumanAnswered []string

	// What guards derive from the call, computed once on first use (guards
	// run one after another, never concurrently, on one Request). Build a
	// new Request for other arguments (an amendment): never change Call
	// once a guard has run.
	decoded     bool
	args        map[string]any // numbers as json.Number
	argsErr     error
	paths       []pathArg
	pathsDone   bool
	condInput   *policy.ConditionInput
	condInputOK bool
	condErr     error
	amountDone  bool
	amt         *Amount
	amtErr      error
}

// arguments returns the call's arguments object, decoded once.
func (r *Request) arguments() (map[string]any, error) {
	if !r.decoded {
		r.decoded = true
		var raw json.RawMessage
		if r.Call != nil {
			raw = r.Call.Arguments
		}
		r.args, r.argsErr = decodeArguments(raw)
	}
	return r.args, r.argsErr
}

// amount returns the amount derived from the call's arguments for a tool
// that declares one (nil otherwise), derived once: the intent envelope and
// the threshold both read it.
func (r *Request) amount() (*Amount, error) {
	if !r.amountDone {
		r.amountDone = true
		if args, err := r.arguments(); err != nil {
			r.amtErr = err
		} else {
			r.amt, r.amtErr = deriveAmount(r.Tool, args)
		}
	}
	return r.amt, r.amtErr
}

// Guard is one check in the pipeline. Check must not block: it is given a
// time budget and a guard that errors, panics or overruns it is a Deny.
type Guard interface {
	Name() string
	// Approval reports whether this guard is an approval trigger (re-run
	// guards on resume skip approval triggers).
	Approval() bool
	Check(r *Request) (Result, error)
}

// Built-in guard names; they appear as `guard` on deny receipts.
const (
	GuardCapability      = "capability"
	GuardScope           = "capability-scope"
	GuardInputSchema     = "input_schema" // the arguments break the tool's declared input_schema
	GuardIntentRequired  = "governed_intent_required"
	GuardAmount          = "amount"          // the tool's declared amount cannot be read from the arguments
	GuardIntentEnvelope  = "intent_envelope" // the arguments exceed the governed intent's max_amount
	GuardForbiddenPaths  = "forbidden_paths"
	GuardAllowedPaths    = "allowed_paths"
	GuardDenyWhen        = policy.KindDenyWhen
	GuardRateLimit       = "max_calls_per_minute"
	GuardApprovalAbove   = "require_approval_above"
	GuardApprovalAlways  = "require_approval_always"
	GuardApprovalFirstN  = "require_approval_first_n"
	GuardApprovalActions = "require_approval_for_actions"
	GuardApprovalWhen    = policy.KindRequireApprovalWhen
	GuardHumanApproval   = "human-approval"
	GuardApprovalTimeout = "approval-timeout"
	GuardPipeline        = "pipeline"
)

type guardFunc struct {
	name     string
	approval bool
	fn       func(*Request) (Result, error)
}

func (g guardFunc) Name() string                     { return g.name }
func (g guardFunc) Approval() bool                   { return g.approval }
func (g guardFunc) Check(r *Request) (Result, error) { return g.fn(r) }

func allow() (Result, error) { return Result{Verdict: Allow}, nil }

// BuiltinGuards are the guards every call runs, in order. Scope comes first
// so later guards may rely on r.Grant being set.
func BuiltinGuards() []Guard {
	return []Guard{
		guardFunc{GuardScope, false, checkScope},
		guardFunc{GuardInputSchema, false, checkInputSchema},
		guardFunc{GuardIntentRequired, false, checkIntentRequired},
		guardFunc{GuardIntentEnvelope, false, checkIntentEnvelope},
		guardFunc{GuardForbiddenPaths, false, checkForbiddenPaths},
		guardFunc{GuardAllowedPaths, false, checkAllowedPaths},
		guardFunc{GuardDenyWhen, false, checkDenyWhen},
		guardFunc{GuardRateLimit, false, checkRateLimit},
		guardFunc{GuardApprovalAbove, true, checkApprovalAbove},
		guardFunc{GuardApprovalAlways, true, checkApprovalAlways},
		guardFunc{GuardApprovalFirstN, true, checkApprovalFirstN},
		guardFunc{GuardApprovalActions, true, checkApprovalActions},
		guardFunc{GuardApprovalWhen, true, checkApprovalWhen},
	}
}

func checkScope(r *Request) (Result, error) {
	if r.Grant == nil {
		return Result{Deny, GuardScope, fmt.Sprintf("capability grants no %q on %s/%s", r.Operation, r.Call.Server, r.Call.Tool)}, nil
	}
	// A name that is a declared tool's in another letter case may reach
	// that tool (a tool server matching names case-insensitively) under a
	// grant written for other tools: refuse it rather than guess.
	if r.Tool == nil && r.Policy != nil {
		if t, ok := r.Policy.ToolInOtherCase(r.Call.Server, r.Call.Tool); ok {
			return Result{Deny, GuardScope, fmt.Sprintf("tool %q is not declared on %s, but %q is: tool names differ only in letter case; call it as %q",
				r.Call.Tool, r.Call.Server, t.Name, t.Name)}, nil
		}
	}
	return allow()
}

func checkIntentRequired(r *Request) (Result, error) {
	// purpose is the intent's required member (SPEC §3): "{}" or a blank
	// purpose tells the approver and the audit nothing, so it is no intent.
	if r.Grant.Constraints.GovernedIntentRequired && (r.Intent == nil || strings.TrimSpace(r.Intent.Purpose) == "") {
		return Result{Deny, GuardIntentRequired, "grant requires a governed intent with a purpose"}, nil
	}
	return allow()
}

func checkRateLimit(r *Request) (Result, error) {
	max := r.Grant.Constraints.MaxCallsPerMinute
	if max > 0 && r.RecentCalls > max {
		return Result{Deny, GuardRateLimit, fmt.Sprintf("more than %d calls in the last minute", max)}, nil
	}
	return allow()
}

// checkIntentEnvelope derives the amount from the arguments of a tool that
// declares one, and holds it to the governed intent's max_amount: same
// currency, no more units. It is not an approval trigger, so it runs again
// on resume, against amended arguments too.
func checkIntentEnvelope(r *Request) (Result, error) {
	if r.Tool == nil || r.Tool.Amount == "" {
		return allow()
	}
	amt, err := r.amount()
	if err != nil {
		return Result{Deny, GuardAmount, err.Error()}, nil
	}
	if r.Intent == nil || r.Intent.MaxAmount == nil {
		return allow()
	}
	env := r.Intent.MaxAmount
	switch {
	case amt.Currency != env.Currency:
		return Result{Deny, GuardIntentEnvelope, fmt.Sprintf("the arguments move %d %s but the governed intent's max_amount is in %s",
			amt.Units, amt.Currency, env.Currency)}, nil
	case amt.Units > env.Units:
		return Result{Deny, GuardIntentEnvelope, fmt.Sprintf("the arguments move %d %s, more than the governed intent's max_amount of %d %s",
			amt.Units, amt.Currency, env.Units, env.Currency)}, nil
	}
	return allow()
}

// checkApprovalAbove compares the amount derived from the arguments with
// the threshold; the agent's own max_amount never decides it.
func checkApprovalAbove(r *Request) (Result, error) {
	t := r.Grant.Constraints.RequireApprovalAbove
	if t == nil {
		return allow()
	}
	// Omitting the intent is not a way around the threshold (seed: "Missing
	// intent is not a free pass").
	if r.Intent == nil {
		return Result{Deny, GuardApprovalAbove, "require_approval_above needs a governed intent"}, nil
	}
	// Policy check refuses a threshold over a tool without an amount; a
	// tool matched only by a pattern grant may still lack one, and then
	// nothing but the agent's word would be left: ask a human.
	if r.Tool == nil || r.Tool.Amount == "" {
		return Result{PendingApproval, GuardApprovalAbove, fmt.Sprintf("tool %q declares no amount; approval required", r.Call.Tool)}, nil
	}
	amt, err := r.amount()
	if err != nil {
		return Result{Deny, GuardAmount, err.Error()}, nil
	}
	// The loader refuses a threshold without a currency; one built in Go
	// may still lack it, and then no amount is known to be below it.
	if t.Currency == "" {
		return Result{PendingApproval, GuardApprovalAbove, fmt.Sprintf("amount %d %s: the threshold names no currency; approval required",
			amt.Units, amt.Currency)}, nil
	}
	if amt.Currency != t.Currency {
		return Result{PendingApproval, GuardApprovalAbove, fmt.Sprintf("amount %d %s is not in the threshold's currency %s; approval required",
			amt.Units, amt.Currency, t.Currency)}, nil
	}
	if amt.Units >= t.ThresholdUnits {
		return Result{PendingApproval, GuardApprovalAbove, fmt.Sprintf("amount %d %s meets the approval threshold of %d %s",
			amt.Units, amt.Currency, t.ThresholdUnits, t.Currency)}, nil
	}
	return allow()
}

func checkApprovalAlways(r *Request) (Result, error) {
	if r.Grant.Constraints.RequireApprovalAlways {
		return Result{PendingApproval, GuardApprovalAlways, "grant requires approval for every call"}, nil
	}
	return allow()
}

func checkApprovalFirstN(r *Request) (Result, error) {
	n := r.Grant.Constraints.RequireApprovalFirstN
	if n > 0 && r.PriorCalls < uint64(n) {
		return Result{PendingApproval, GuardApprovalFirstN, fmt.Sprintf("call %d of the first %d needs approval", r.PriorCalls+1, n)}, nil
	}
	return allow()
}

func checkApprovalActions(r *Request) (Result, error) {
	cats := r.Grant.Constraints.RequireApprovalForActions
	if len(cats) == 0 {
		return allow()
	}
	// A tool the policy does not declare has no known category: a pattern
	// grant must not let it skip approval, so an unknown tool asks. (A
	// declared tool without a category was classified by the platform team.)
	if r.Tool == nil {
		return Result{PendingApproval, GuardApprovalActions, fmt.Sprintf("tool %q declares no category; approval required", r.Call.Tool)}, nil
	}
	if slices.Contains(cats, r.Tool.Category) {
		return Result{PendingApproval, GuardApprovalActions, fmt.Sprintf("tool category %q requires approval", r.Tool.Category)}, nil
	}
	// The agent may also declare a category; it can only add a requirement.
	if r.Intent != nil && r.Intent.ActionCategory != "" && slices.Contains(cats, r.Intent.ActionCategory) {
		return Result{PendingApproval, GuardApprovalActions, fmt.Sprintf("declared action category %q requires approval", r.Intent.ActionCategory)}, nil
	}
	return allow()
}
