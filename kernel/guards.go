package kernel

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

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
	GuardIntentRequired  = "governed_intent_required"
	GuardForbiddenPaths  = "forbidden_paths"
	GuardRateLimit       = "max_calls_per_minute"
	GuardApprovalAbove   = "require_approval_above"
	GuardApprovalAlways  = "require_approval_always"
	GuardApprovalFirstN  = "require_approval_first_n"
	GuardApprovalActions = "require_approval_for_actions"
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
		guardFunc{GuardIntentRequired, false, checkIntentRequired},
		guardFunc{GuardForbiddenPaths, false, checkForbiddenPaths},
		guardFunc{GuardRateLimit, false, checkRateLimit},
		guardFunc{GuardApprovalAbove, true, checkApprovalAbove},
		guardFunc{GuardApprovalAlways, true, checkApprovalAlways},
		guardFunc{GuardApprovalFirstN, true, checkApprovalFirstN},
		guardFunc{GuardApprovalActions, true, checkApprovalActions},
	}
}

func checkScope(r *Request) (Result, error) {
	if r.Grant == nil {
		return Result{Deny, GuardScope, fmt.Sprintf("capability grants no %q on %s/%s", r.Operation, r.Call.Server, r.Call.Tool)}, nil
	}
	return allow()
}

func checkIntentRequired(r *Request) (Result, error) {
	if r.Grant.Constraints.GovernedIntentRequired && r.Intent == nil {
		return Result{Deny, GuardIntentRequired, "grant requires a governed intent"}, nil
	}
	return allow()
}

func checkForbiddenPaths(r *Request) (Result, error) {
	pats := r.Grant.Constraints.ForbiddenPaths
	if len(pats) == 0 {
		return allow()
	}
	var args any
	if err := json.Unmarshal(r.Call.Arguments, &args); err != nil {
		return Result{}, fmt.Errorf("decode arguments: %w", err)
	}
	var hit string
	walkStrings(args, 0, func(s string) bool {
		if !looksLikePath(s) {
			return true
		}
		// Clean first so "/tmp/../etc/passwd" cannot walk around a pattern.
		candidates := []string{path.Clean(s)}
		if !strings.HasPrefix(s, "/") {
			candidates = append(candidates, path.Clean("/"+s))
		}
		for _, c := range candidates {
			for _, p := range pats {
				if ok, _ := doublestar.Match(p, c); ok {
					hit = s + " matches " + p
					return false
				}
			}
		}
		return true
	})
	if hit != "" {
		return Result{Deny, GuardForbiddenPaths, "forbidden path: " + hit}, nil
	}
	return allow()
}

func looksLikePath(s string) bool {
	return strings.ContainsAny(s, "/\\") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".")
}

// walkStrings visits every string in a decoded JSON value (depth-bounded by
// the canonical decoder already; the bound here is defence in depth).
func walkStrings(v any, depth int, f func(string) bool) bool {
	if depth > 64 {
		return false
	}
	switch t := v.(type) {
	case string:
		return f(strings.ReplaceAll(t, "\\", "/"))
	case []any:
		for _, e := range t {
			if !walkStrings(e, depth+1, f) {
				return false
			}
		}
	case map[string]any:
		for k, e := range t {
			// Keys can carry paths too ({"/etc/passwd": "…"}).
			if !f(strings.ReplaceAll(k, "\\", "/")) || !walkStrings(e, depth+1, f) {
				return false
			}
		}
	}
	return true
}

func checkRateLimit(r *Request) (Result, error) {
	max := r.Grant.Constraints.MaxCallsPerMinute
	if max > 0 && r.RecentCalls > max {
		return Result{Deny, GuardRateLimit, fmt.Sprintf("more than %d calls in the last minute", max)}, nil
	}
	return allow()
}

func checkApprovalAbove(r *Request) (Result, error) {
	t := r.Grant.Constraints.RequireApprovalAbove
	if t == nil {
		return allow()
	}
	// Omitting the intent is not a way around the threshold (seed: "Missing
	// intent is not a free pass").
	if r.Intent == nil || r.Intent.MaxAmount == nil {
		return Result{Deny, GuardApprovalAbove, "require_approval_above needs a governed intent with max_amount"}, nil
	}
	if r.Intent.MaxAmount.Units >= t.ThresholdUnits {
		return Result{PendingApproval, GuardApprovalAbove, fmt.Sprintf("amount %d %s meets the approval threshold %d", r.Intent.MaxAmount.Units, r.Intent.MaxAmount.Currency, t.ThresholdUnits)}, nil
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
