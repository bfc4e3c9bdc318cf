package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt stats", "receipt counts and approval latency (avg, p50, p95), with list's filters and --group-by FIELD", runReceiptStats)
}

func runReceiptStats(e *Env, args []string) int {
	fs := newFlags(e, "receipt stats")
	r := addRemote(fs, e)
	filters := addFilterFlags(fs)
	groupBy := fs.String("group-by", "", "decision, guard, tool_server, tool_name, subject or metadata.KEY")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("receipt stats", pos, 0); err != nil {
		return fail(e, err)
	}
	if err := filters.refuseEmpty(fs, "receipt stats"); err != nil {
		return fail(e, err)
	}
	if err := filters.checkValues("receipt stats"); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	if _, err := receipt.NewStats(*groupBy); err != nil {
		return fail(e, usageErr("receipt stats", "--group-by: %v", err))
	}
	q := filters.values()
	if *groupBy != "" {
		q.Set("group_by", *groupBy)
	}
	ctx, cancel := ctxTimeout(5 * time.Minute)
	defer cancel()
	var ans struct {
		receipt.StatsResult
		Since string `json:"since"`
		Until string `json:"until"`
	}
	if _, err := r.do(ctx, "GET", "/v1/receipts/stats?"+q.Encode(), nil, &ans); err != nil {
		return fail(e, err)
	}
	res := ans.StatsResult
	out := statsOutput{StatsResult: res}
	// Grouped by approver, the kernel's own auto-approvals at a deadline
	// (auto_approve_advisory) would count as an approver and their latency
	// (the whole timeout) as a person's: they are moved to a section of
	// their own, found by asking again for just the auto-approved receipts.
	if isApproverField(*groupBy) {
		// Of the same window: a bound given as a duration is asked again
		// as the time chiod counted it to, or time passing between the
		// two answers would move it (receipts.go, pinDurationBound).
		var held int64
		if err := pinDurationBound(q, "since", ans.Since, &held); err != nil {
			return fail(e, fmt.Errorf("receipt stats: %w; nothing shown", err))
		}
		if err := pinDurationBound(q, "until", ans.Until, &held); err != nil {
			return fail(e, fmt.Errorf("receipt stats: %w; nothing shown", err))
		}
		auto, err := autoApprovedOf(ctx, r, q, &res)
		if err != nil {
			return fail(e, err)
		}
		out.StatsResult = res
		out.split(auto)
	}
	if r.output != "table" {
		printJSON(e.Stdout, out, r.output == "jsonl")
		return ExitOK
	}
	head := "GROUP"
	if *groupBy != "" {
		head = *groupBy
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tCOUNT\tLATENCY AVG\tP50\tP95\n", head)
	statsRows(tw, out.Groups)
	tw.Flush()
	if len(out.AutoApproved) > 0 {
		fmt.Fprintln(e.Stdout, "\nnot a person: auto-approved by the kernel at the deadline (auto_approve_advisory; review_required)")
		tw = tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tCOUNT\tLATENCY AVG\tP50\tP95\n", head)
		statsRows(tw, out.AutoApproved)
		tw.Flush()
	}
	fmt.Fprintf(e.Stdout, "total %d receipts\n", res.Total)
	fmt.Fprintln(e.Stdout, "UNVERIFIED: chiod's own count; no signature covers a count (chio receipt list verifies receipts, chio receipt verify --all the log)")
	return ExitOK
}

// statsOutput is the server's stats, with auto-approvals apart when the
// groups are approvers.
type statsOutput struct {
	receipt.StatsResult
	// Verified is always false: the figures are chiod's own count, which
	// no signature covers, and nothing here checks them.
	Verified bool `json:"verified"`
	// AutoApproved are the groups of receipts the kernel auto-approved
	// (they are not in Groups); Total still counts them.
	AutoApproved []receipt.StatsGroup `json:"auto_approved,omitempty"`
}

func isApproverField(f string) bool {
	return f == "metadata.approver" || f == "metadata.approver_display_name"
}

// statsSnapshotTries bounds how often autoApprovedOf asks again while
// auto-approvals keep being committed in the window.
const statsSnapshotTries = 5

// autoApprovedOf asks chiod for the counts (into *res) and, of the same
// snapshot, the auto-approved receipts among them (q: the window pinned).
// Each answer is a consistent cut, but of its own moment: an auto-approval
// committed between two questions is in the second only, and split then
// shows more (or fewer) than total counts. So the counts are asked between
// two questions for the auto-approvals: the log only grows, so the same
// auto-approval total before and after means none was committed
// meanwhile, and the counts hold exactly those. Other receipts committed
// meanwhile are in the counts as in any answer; only auto-approvals
// committed throughout make it give up.
func autoApprovedOf(ctx context.Context, r *remote, q url.Values, res *receipt.StatsResult) (receipt.StatsResult, error) {
	aq := url.Values{}
	for k, v := range q {
		aq[k] = slices.Clone(v)
	}
	aq.Add("meta", "auto_approved=true")
	var auto receipt.StatsResult
	if _, err := r.do(ctx, "GET", "/v1/receipts/stats?"+aq.Encode(), nil, &auto); err != nil {
		return auto, err
	}
	for range statsSnapshotTries {
		var all, after receipt.StatsResult
		if _, err := r.do(ctx, "GET", "/v1/receipts/stats?"+q.Encode(), nil, &all); err != nil {
			return auto, err
		}
		if _, err := r.do(ctx, "GET", "/v1/receipts/stats?"+aq.Encode(), nil, &after); err != nil {
			return auto, err
		}
		if after.Total == auto.Total {
			*res = all
			return auto, nil
		}
		auto = after
	}
	return receipt.StatsResult{}, fmt.Errorf("receipt stats: auto-approvals kept being committed in the window while it was counted (%d tries); nothing shown: try again, or give an --until in the past", statsSnapshotTries)
}

// split moves auto's groups out of o.Groups into o.AutoApproved.
func (o *statsOutput) split(auto receipt.StatsResult) {
	autoCount := map[string]uint64{}
	for _, g := range auto.Groups {
		autoCount[g.Key] = g.Count
	}
	groups := o.Groups[:0:0]
	for _, g := range o.Groups {
		if n := autoCount[g.Key]; n > 0 {
			if n >= g.Count {
				continue
			}
			g.Count -= n // a person shares the kernel's name; their latency is mixed in
		}
		groups = append(groups, g)
	}
	o.Groups = groups
	o.AutoApproved = auto.Groups
}

func statsRows(tw io.Writer, groups []receipt.StatsGroup) {
	for _, g := range groups {
		// Escaped as every table is: a key is chiod's word, and grouped by
		// metadata it is often the tool's own text (tool_error, reason).
		key := shown(g.Key)
		if key == "" {
			key = "(none)"
		}
		if l := g.LatencyMs; l != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", key, g.Count, ms(l.Avg), ms(l.P50), ms(l.P95))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\n", key, g.Count)
		}
	}
}

// ms renders milliseconds for people: 850ms, 4.2s, 3m10s.
func ms(v float64) string {
	d := time.Duration(v * float64(time.Millisecond))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
