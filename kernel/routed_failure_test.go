package kernel

import (
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

// on_trigger = "require_approval" routes a guard's deny to a human: the
// human is asked about what the guard found (a path under /etc, a call
// over the rate limit). A guard that could not decide at all (it erred,
// panicked or overran its budget) found nothing to ask about, and
// failing is a deny (SPEC §4), as an undecidable require_approval_when
// is. Routed, it asked a human a question with no answer in it, and once
// approved the resume skipped the guard: the path was never judged.
func TestRoutedGuardThatFailsDenies(t *testing.T) {
	routed := grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"},
		OnTrigger: map[string]string{GuardForbiddenPaths: policy.OnTriggerRequireApproval}})
	var now time.Duration // the stopwatch's reading
	for _, c := range []struct {
		name  string
		check func(*Request) (Result, error)
	}{
		{"error", func(*Request) (Result, error) { return Result{}, errors.New("disk on fire") }},
		{"panic", func(*Request) (Result, error) { panic("boom") }},
		{"overrun", func(*Request) (Result, error) { now += 2 * GuardBudget; return allow() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := &Pipeline{Budget: GuardBudget, Guards: []Guard{
				guardFunc{GuardScope, false, checkScope},
				guardFunc{GuardForbiddenPaths, false, c.check},
			}, Stopwatch: func() time.Duration { now += time.Microsecond; return now }}
			r := req(routed, `{"p":"/srv/x"}`, nil)
			if d := pl.Evaluate(r, true); d.Verdict != Deny || d.Guard != GuardForbiddenPaths {
				t.Fatalf("deciding: got %v by %q (%s), want deny by %s", d.Verdict, d.Guard, d.Reason, GuardForbiddenPaths)
			}
			// A resume whose human answered the routed guard: its failure
			// still denies.
			r = req(routed, `{"p":"/srv/x"}`, nil)
			r.HumanAnswered = []string{GuardForbiddenPaths}
			if d := pl.Evaluate(r, false); d.Verdict != Deny || d.Guard != GuardForbiddenPaths {
				t.Fatalf("resuming: got %v by %q (%s), want deny by %s", d.Verdict, d.Guard, d.Reason, GuardForbiddenPaths)
			}
		})
	}
}
