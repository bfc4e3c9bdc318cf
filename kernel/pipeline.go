package kernel

import (
	"fmt"
	"slices"
	"time"
)

// Decision is the pipeline's combined answer.
type Decision struct {
	Verdict     Verdict
	Guard       string   // the denying guard (Deny)
	Reason      string   // why (Deny), or the triggers' reasons (Pending)
	TriggeredBy []string // approval triggers that fired (Pending)
}

// Pipeline runs guards in order. It is a pure function of the Request: the
// reference time is r.Now and stopwatch is only used to enforce budgets.
type Pipeline struct {
	Guards []Guard
	Budget time.Duration
	// Stopwatch measures a guard's run time (monotonic); tests replace it.
	Stopwatch func() time.Duration
}

// Evaluate runs every guard and combines: any Deny dominates any
// PendingApproval; approval is asked only when every non-approval guard
// allows. With approvals=false approval triggers are skipped (resume path),
// and so are routed denies the human answered (Request.HumanAnswered).
func (p *Pipeline) Evaluate(r *Request, approvals bool) Decision {
	var pending Decision
	for _, g := range p.Guards {
		if g.Approval() && !approvals {
			continue
		}
		res, failed := p.run(g, r)
		switch res.Verdict {
		case Allow:
		case PendingApproval:
			pending.Verdict = PendingApproval
			pending.TriggeredBy = append(pending.TriggeredBy, g.Name())
			if pending.Reason != "" {
				pending.Reason += "; "
			}
			pending.Reason += res.Reason
		case Deny:
			// A non-approval guard may be routed to a human instead of a deny;
			// on resume, the human who answered that trigger has decided it.
			// A guard that failed (erred, panicked, overran) decided nothing
			// a human could answer: it denies, routed or not, as an
			// undecidable condition does.
			routed := !failed && !g.Approval() && r.Grant != nil && r.Grant.Constraints.OnTrigger[g.Name()] == "require_approval"
			if routed && !approvals && slices.Contains(r.HumanAnswered, g.Name()) {
				continue
			}
			if routed && approvals {
				pending.Verdict = PendingApproval
				pending.TriggeredBy = append(pending.TriggeredBy, g.Name())
				if pending.Reason != "" {
					pending.Reason += "; "
				}
				pending.Reason += res.Reason
				continue
			}
			return Decision{Verdict: Deny, Guard: res.Guard, Reason: res.Reason}
		default:
			return Decision{Verdict: Deny, Guard: g.Name(), Reason: "guard returned an unknown verdict"}
		}
		if r.Grant == nil { // scope denied above; nothing else can run safely
			return Decision{Verdict: Deny, Guard: GuardScope, Reason: "no grant"}
		}
	}
	return pending // zero value is Allow
}

// run executes one guard, turning an error, panic, overrun or unlabeled deny
// into a Deny by that guard: every failure path fails closed. failed
// reports a Deny that is the guard's failure rather than its verdict.
func (p *Pipeline) run(g Guard, r *Request) (res Result, failed bool) {
	defer func() {
		if x := recover(); x != nil {
			res, failed = Result{Verdict: Deny, Guard: g.Name(), Reason: fmt.Sprintf("guard panicked: %v", x)}, true
		}
	}()
	start := p.Stopwatch()
	res, err := g.Check(r)
	if err != nil {
		return Result{Verdict: Deny, Guard: g.Name(), Reason: "guard error: " + err.Error()}, true
	}
	if p.Budget > 0 && p.Stopwatch()-start > p.Budget {
		return Result{Verdict: Deny, Guard: g.Name(), Reason: fmt.Sprintf("guard overran its %s budget", p.Budget)}, true
	}
	if res.Verdict != Allow && res.Guard == "" {
		res.Guard = g.Name()
	}
	return res, false
}
