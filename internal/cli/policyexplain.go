package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

func init() {
	register("policy explain FILE", "show how a policy decides one call (--server S --tool T --args JSON): the grant, every guard's verdict, the outcome; runs nothing", runPolicyExplain)
}

// callInput is a call to explain: what an agent would send, and what the
// kernel would know about the agent.
type callInput struct {
	Server, Tool, Operation string
	Args, Intent            json.RawMessage
	Grants                  []string // the capability's grants; none = every grant of the policy
	Subject                 string   // the agent's key; "" = any agent
	PriorCalls              uint64   // committed calls under the grant before this one (require_approval_first_n)
	RecentCalls             int      // calls under the grant in the last minute, this one included
}

// explanation is what `chio policy explain` prints: which grant matched,
// what each guard said, and what the kernel would do.
type explanation struct {
	Policy     string        `json:"policy"`
	PolicyHash string        `json:"policy_hash"`
	Call       explainedCall `json:"call"`
	Grant      string        `json:"grant,omitempty"` // "" = no grant of the capability covers the call
	Guards     []guardRow    `json:"guards"`
	Outcome    outcomeRow    `json:"outcome"`
	Approval   *approvalPlan `json:"approval,omitempty"`
	Assumes    []string      `json:"assumes"`
}

type explainedCall struct {
	Server    string   `json:"server"`
	Tool      string   `json:"tool"`
	Operation string   `json:"operation"`
	Subject   string   `json:"subject,omitempty"`
	Grants    []string `json:"grants,omitempty"`
}

// guardRow is one guard's own verdict, as the kernel's pipeline runs it
// (an error, panic or overrun is that guard's deny).
type guardRow struct {
	Guard           string `json:"guard"`
	ApprovalTrigger bool   `json:"approval_trigger"`
	Verdict         string `json:"verdict"` // allow | deny | pending_approval | not_run
	Reason          string `json:"reason,omitempty"`
	// RoutedToHuman: the guard denied and the grant's on_trigger turns
	// its deny into a request for approval.
	RoutedToHuman bool `json:"routed_to_human,omitempty"`
}

// outcomeRow is the combined decision and what decided it: like a Cedar
// answer names the policies that decided, this names the grant and guards.
type outcomeRow struct {
	Verdict     string   `json:"verdict"` // allow | deny | pending_approval
	Guard       string   `json:"guard,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	TriggeredBy []string `json:"triggered_by,omitempty"`
	DecidedBy   []string `json:"decided_by"`
}

// approvalPlan is who a pending call would ask, in the first tier (or the
// first with someone whose vote counts: SkippedTiers).
type approvalPlan struct {
	Approvers      []string `json:"approvers"`
	Quorum         int      `json:"quorum"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	TimeoutAction  string   `json:"timeout_action"`
	Channels       []string `json:"channels"`
	Tiers          int      `json:"tiers,omitempty"`
	// Uncounted are the grant's approvers (of this tier) whose vote the
	// kernel would refuse: the calling agent's own key (--subject).
	Uncounted []string `json:"uncounted,omitempty"`
	// Tier is the escalation tier (0-based) the call would wait at: the
	// first, unless the kernel passes over tiers in which nobody but the
	// calling agent may vote (SkippedTiers; kernel/skip_tiers.go).
	Tier         int   `json:"tier,omitempty"`
	SkippedTiers []int `json:"skipped_tiers,omitempty"`
}

// errBadCall is a call the kernel would refuse before deciding (400, no
// receipt): malformed arguments, intent or confirm/ask fields.
var errBadCall = errors.New("the kernel would refuse this call before deciding (400 bad_request, no receipt)")

// explainCall decides in as the kernel's pipeline would, against p, at
// now, without a store, a dispatch or a receipt. The guards are
// kernel.BuiltinGuards(), in the kernel's order, run by kernel.Pipeline:
// guards added there appear here unchanged.
func explainCall(p *policy.Policy, in callInput, now time.Time) (*explanation, error) {
	// The kernel's own shape check, so that a call chiod refuses before
	// deciding (a bad name, oversized or non-object arguments, an oversized
	// intent) is "rejected" here too. It canonicalizes what it checks: the
	// kernel judges the canonical form of what the agent sent.
	shape := &kernel.ToolCall{Server: in.Server, Tool: in.Tool, Operation: in.Operation, Arguments: in.Args, GovernedIntent: in.Intent}
	if err := kernel.CheckCallShape(shape); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCall, err)
	}
	in.Operation, in.Args, in.Intent = shape.Operation, shape.Arguments, shape.GovernedIntent
	intent, err := kernel.ParseIntent(in.Intent)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCall, err)
	}
	for _, g := range in.Grants {
		if _, ok := p.Grant(g); !ok {
			return nil, fmt.Errorf("grant %q is not in %s", g, p.Source)
		}
	}
	has := func(id string) bool { return len(in.Grants) == 0 || slices.Contains(in.Grants, id) }
	grant, _ := p.Match(has, in.Server, in.Tool, in.Operation)
	tool, _ := p.Tool(in.Server, in.Tool)
	call := &kernel.ToolCall{RequestID: "req-explain", Server: in.Server, Tool: in.Tool, Operation: in.Operation,
		Arguments: in.Args, GovernedIntent: in.Intent}
	req := &kernel.Request{Policy: p, Grant: grant, Tool: tool, Call: call, Operation: in.Operation,
		Subject: in.Subject, Intent: intent, Now: now}
	x := &explanation{Policy: p.Source, PolicyHash: p.Hash,
		Call:    explainedCall{Server: in.Server, Tool: in.Tool, Operation: in.Operation, Subject: in.Subject, Grants: in.Grants},
		Assumes: []string{"the capability is valid: signed by a trusted key, not expired, not revoked"}}
	if grant != nil && in.Subject == "" && p.Conditions(grant.ID).ReadsSubject() {
		// Evaluated with no key, such a condition would answer for an
		// agent that does not exist, under "by any agent".
		return nil, fmt.Errorf("grant %s's conditions read subject: the outcome depends on the agent; name its key (--subject, or subject in a case)", grant.ID)
	}
	if grant != nil {
		x.Grant = grant.ID
		if grant.Constraints.RequireApprovalFirstN > 0 {
			req.PriorCalls = in.PriorCalls
			x.Assumes = append(x.Assumes, fmt.Sprintf("%d earlier calls under grant %s (--prior-calls)", in.PriorCalls, grant.ID))
		}
		if grant.Constraints.MaxCallsPerMinute > 0 {
			req.RecentCalls = max(in.RecentCalls, 1)
			x.Assumes = append(x.Assumes, fmt.Sprintf("%d calls in the last minute, this one included (--recent-calls)", req.RecentCalls))
		}
	}
	start := time.Now()
	stopwatch := func() time.Duration { return time.Since(start) }
	for _, g := range kernel.BuiltinGuards() {
		row := guardRow{Guard: g.Name(), ApprovalTrigger: g.Approval(), Verdict: "not_run"}
		if grant != nil || g.Name() == kernel.GuardScope {
			// One guard alone through the kernel's pipeline: its own
			// verdict, with the pipeline's fail-closed handling.
			d := (&kernel.Pipeline{Guards: []kernel.Guard{g}, Budget: kernel.GuardBudget, Stopwatch: stopwatch}).Evaluate(req, true)
			row.Verdict, row.Reason = d.Verdict.String(), d.Reason
			row.RoutedToHuman = d.Verdict == kernel.PendingApproval && !g.Approval()
		} else {
			row.Reason = "no grant matched: only capability-scope runs"
		}
		x.Guards = append(x.Guards, row)
	}
	d := (&kernel.Pipeline{Guards: kernel.BuiltinGuards(), Budget: kernel.GuardBudget, Stopwatch: stopwatch}).Evaluate(req, true)
	if tool.IsHITL() {
		// confirm / ask always ask a human once the guards allow (as the
		// kernel does); their fields are checked first.
		if err := kernel.CheckHITLArgs(in.Tool, in.Args); err != nil {
			return nil, fmt.Errorf("%w: %v", errBadCall, err)
		}
		if d.Verdict == kernel.Allow {
			d = kernel.Decision{Verdict: kernel.PendingApproval, TriggeredBy: []string{"hitl"}, Reason: "the agent asks a human (" + in.Tool + ")"}
		}
	}
	x.Outcome = outcomeRow{Verdict: d.Verdict.String(), Guard: d.Guard, Reason: d.Reason, TriggeredBy: d.TriggeredBy}
	switch d.Verdict {
	case kernel.Deny:
		x.Outcome.DecidedBy = []string{"guard " + d.Guard}
		if grant != nil {
			x.Outcome.DecidedBy = append([]string{"grant " + grant.ID}, x.Outcome.DecidedBy...)
		}
	case kernel.PendingApproval:
		x.Outcome.DecidedBy = []string{"grant " + grant.ID}
		for _, t := range d.TriggeredBy {
			x.Outcome.DecidedBy = append(x.Outcome.DecidedBy, "trigger "+t)
		}
		x.Approval = plan(grant, in.Subject)
		if len(x.Approval.Approvers) == 0 {
			// Every approver is the calling agent: nobody may decide the
			// request, and the kernel denies the call rather than park it
			// (kernel/approvals.go, suspend).
			x.Outcome = outcomeRow{Verdict: kernel.Deny.String(), Guard: kernel.GuardApprovalPolicy, TriggeredBy: d.TriggeredBy,
				Reason: fmt.Sprintf("no approver of grant %s may decide this call under the policy in force: "+
					"the kernel never counts the calling agent's vote on its own call, nor a requester's", grant.ID)}
			x.Outcome.DecidedBy = []string{"grant " + grant.ID, "guard " + kernel.GuardApprovalPolicy}
			break
		}
		// Nor one whose quorum fewer may meet, in every tier, and that no
		// deadline runs (a confirm's or ask's never does): it could only
		// end denied (suspend, likewise).
		if n := kernel.MayDecideAtMost(grant.Approval, in.Subject); n < x.Approval.Quorum && !kernel.MayRunAtDeadline(grant.Approval, tool.IsHITL()) {
			x.Outcome = outcomeRow{Verdict: kernel.Deny.String(), Guard: kernel.GuardApprovalPolicy, TriggeredBy: d.TriggeredBy,
				Reason: kernel.QuorumUnreachable(grant.ID, x.Approval.Quorum, n)}
			x.Outcome.DecidedBy = []string{"grant " + grant.ID, "guard " + kernel.GuardApprovalPolicy}
			break
		}
		x.Assumes = append(x.Assumes, "no standing (batch) approval covers the call (one could approve it at once)",
			// The kernel denies a call that would park one request more
			// than the agent may have waiting (kernel/pending_cap.go).
			fmt.Sprintf("the agent has fewer than %d approval requests waiting (max_pending_approvals_per_agent; else the call is denied)",
				p.Kernel.PendingApprovalCap()))
	default:
		x.Outcome.DecidedBy = []string{"grant " + grant.ID + ": every guard allowed"}
	}
	if s, ok := p.Server(in.Server); ok && s.Transport == policy.TransportMCP && x.Outcome.Verdict != kernel.Deny.String() {
		// chiod's pipeline also holds the call to the upstream's listing
		// (internal/dispatch/mcp's SchemaGuard), which the file does not hold.
		x.Assumes = append(x.Assumes, fmt.Sprintf("mcp server %s offers tool %s and the arguments match its inputSchema "+
			"(chiod checks both against the upstream's tools/list; else guard mcp-input-schema denies)", in.Server, in.Tool))
	}
	return x, nil
}

// plan is who the request would go to first: with escalation, the first
// tier; otherwise every approver of the grant. An approver whose key is
// the calling agent's (subject) is listed as uncounted: the kernel never
// counts an agent's vote on its own call (kernel/approvers.go).
func plan(g *policy.Grant, subject string) *approvalPlan {
	a := g.Approval
	if a == nil {
		return &approvalPlan{}
	}
	pl := &approvalPlan{Quorum: max(a.Quorum, 1), TimeoutSeconds: a.TimeoutSeconds, TimeoutAction: a.TimeoutAction, Channels: a.Channels}
	if a.TimeoutAction == "escalate" && a.Escalation != nil && len(a.Escalation.Tiers) > 0 {
		pl.Tiers = len(a.Escalation.Tiers)
		// A tier in which nobody but the agent may vote is passed over to
		// the next with someone (kernel/skip_tiers.go), whose approvers
		// include the earlier tiers' (escalation is cumulative).
		for pl.Tier = 0; ; pl.Tier++ {
			pl.Approvers, pl.Uncounted = nil, nil
			for _, t := range a.Escalation.Tiers[:pl.Tier+1] {
				for _, name := range t.Approvers {
					if slices.Contains(pl.Approvers, name) || slices.Contains(pl.Uncounted, name) {
						continue
					}
					ap, ok := a.ApproverByName(name)
					pl.add(name, ok && subject != "" && ap.PublicKey.String() == subject)
				}
			}
			if len(pl.Approvers) > 0 || pl.Tier == pl.Tiers-1 {
				break
			}
		}
		if len(pl.Approvers) == 0 {
			pl.Tier = 0 // nobody in any tier: denied at once, as asked at the first
		}
		for i := range pl.Tier {
			pl.SkippedTiers = append(pl.SkippedTiers, i)
		}
		t := a.Escalation.Tiers[pl.Tier]
		if len(t.Channels) > 0 {
			pl.Channels = t.Channels
		}
		if t.TimeoutSeconds > 0 {
			pl.TimeoutSeconds = t.TimeoutSeconds
		}
		return pl
	}
	for _, ap := range a.Approvers {
		pl.add(cmp.Or(ap.DisplayName, ap.PublicKey.String()), subject != "" && ap.PublicKey.String() == subject)
	}
	return pl
}

// add lists an approver as asked, or as uncounted when it is the agent.
func (pl *approvalPlan) add(name string, isAgent bool) {
	if isAgent {
		pl.Uncounted = append(pl.Uncounted, name)
		return
	}
	pl.Approvers = append(pl.Approvers, name)
}

func runPolicyExplain(e *Env, args []string) int {
	fs := newFlags(e, "policy explain")
	output := fs.String("output", "table", "output: table or json")
	server := fs.String("server", "", "tool server (required)")
	tool := fs.String("tool", "", "tool (required)")
	argsJSON := fs.String("args", "{}", "tool arguments (JSON object)")
	intent := fs.String("intent", "", "governed intent (JSON object)")
	var grants multi
	fs.Var(&grants, "grant", "a grant the agent's capability holds (repeatable; default: every grant)")
	subject := fs.String("subject", "", "the agent's public key (ed25519:…)")
	op := fs.String("operation", "invoke", "operation")
	prior := fs.Uint64("prior-calls", 0, "calls the agent made under the grant before (require_approval_first_n)")
	recent := fs.Int("recent-calls", 1, "calls in the last minute, this one included (max_calls_per_minute)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("policy explain", pos, 1); err != nil {
		return fail(e, err)
	}
	switch {
	case *server == "" || *tool == "":
		return fail(e, usageErr("policy explain", "--server and --tool are required"))
	case *output != "table" && *output != "json" && *output != "jsonl":
		return fail(e, usageErr("policy explain", "--output must be table or json"))
	case *recent < 1:
		return fail(e, usageErr("policy explain", "--recent-calls counts this call: at least 1"))
	}
	if *subject != "" {
		if _, err := keys.ParsePublicKey(*subject); err != nil {
			return fail(e, usageErr("policy explain", "--subject: %v", err))
		}
	}
	p, err := policy.Load(pos[0])
	if err != nil {
		fmt.Fprintln(e.Stderr, err)
		return ExitError
	}
	in := callInput{Server: *server, Tool: *tool, Operation: *op, Args: json.RawMessage(*argsJSON), Grants: grants,
		Subject: *subject, PriorCalls: *prior, RecentCalls: *recent}
	if *intent != "" {
		in.Intent = json.RawMessage(*intent)
	}
	x, err := explainCall(p, in, time.Now())
	if err != nil {
		return fail(e, usageErr("policy explain", "%v", err))
	}
	if *output != "table" {
		printJSON(e.Stdout, x, *output == "jsonl")
		return ExitOK
	}
	printExplanation(e.Stdout, x)
	return ExitOK
}

func printExplanation(w io.Writer, x *explanation) {
	fmt.Fprintf(w, "policy:   %s (policy_hash %s)\n", x.Policy, x.PolicyHash)
	c := x.Call
	fmt.Fprintf(w, "call:     %s/%s (%s) by %s, capability holding %s\n", c.Server, c.Tool, c.Operation,
		cmp.Or(c.Subject, "any agent"), cmp.Or(strings.Join(c.Grants, ", "), "every grant"))
	fmt.Fprintf(w, "grant:    %s\n\n", cmp.Or(x.Grant, "none matches (capability-scope denies)"))
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "GUARD\tKIND\tVERDICT\tREASON")
	for _, g := range x.Guards {
		kind := "check"
		if g.ApprovalTrigger {
			kind = "approval trigger"
		}
		reason := g.Reason
		if g.RoutedToHuman {
			reason += " (on_trigger: ask a human instead of denying)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Guard, kind, g.Verdict, dash(reason))
	}
	tw.Flush()
	o := x.Outcome
	fmt.Fprintf(w, "\noutcome:  %s", o.Verdict)
	switch o.Verdict {
	case "deny":
		fmt.Fprintf(w, " by %s: %s", o.Guard, o.Reason)
	case "pending_approval":
		fmt.Fprintf(w, ": %s", o.Reason)
	}
	fmt.Fprintf(w, "\ndecided:  %s\n", strings.Join(o.DecidedBy, "; "))
	if a := x.Approval; a != nil {
		asks := strings.Join(a.Approvers, ", ")
		if asks == "" {
			asks = "nobody whose vote counts"
		}
		fmt.Fprintf(w, "asks:     %s (quorum %d) via %s; after %ds: %s", asks, a.Quorum,
			strings.Join(a.Channels, ", "), a.TimeoutSeconds, a.TimeoutAction)
		if a.Tiers > 0 {
			fmt.Fprintf(w, " (tier %d of %d)", a.Tier+1, a.Tiers)
		}
		fmt.Fprintln(w)
		if note := approval.SkippedTiersNote(a.SkippedTiers); note != "" {
			fmt.Fprintf(w, "skipped:  %s\n", note)
		}
		if len(a.Uncounted) > 0 {
			fmt.Fprintf(w, "uncounted: %s (the calling agent: the kernel refuses its vote on its own call)\n", strings.Join(a.Uncounted, ", "))
		}
	}
	for _, s := range x.Assumes {
		fmt.Fprintf(w, "assumes:  %s\n", s)
	}
}
