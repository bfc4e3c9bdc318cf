package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt stats", "receipt counts and approval latency: [filters] --group-by FIELD", runReceiptStats)
}

func runReceiptStats(e *Env, args []string) int {
	fs := newFlags(e, "receipt stats")
	r := addRemote(fs, e)
	filters := addFilterFlags(fs)
	groupBy := fs.String("group-by", "", "decision, guard, tool_server, tool_name, subject or metadata.KEY")
	if _, err := parse(fs, args); err != nil {
		return ExitUsage
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	if _, err := receipt.NewStats(*groupBy); err != nil {
		return fail(e, usageError(err.Error()))
	}
	q := filters.values()
	if *groupBy != "" {
		q.Set("group_by", *groupBy)
	}
	ctx, cancel := ctxTimeout(5 * time.Minute)
	defer cancel()
	var res receipt.StatsResult
	if _, err := r.do(ctx, "GET", "/v1/receipts/stats?"+q.Encode(), nil, &res); err != nil {
		return fail(e, err)
	}
	if r.output != "table" {
		printJSON(e.Stdout, res, r.output == "jsonl")
		return ExitOK
	}
	head := "GROUP"
	if *groupBy != "" {
		head = *groupBy
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tCOUNT\tLATENCY AVG\tP50\tP95\n", head)
	for _, g := range res.Groups {
		key := g.Key
		if key == "" {
			key = "(none)"
		}
		if l := g.LatencyMs; l != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", key, g.Count, ms(l.Avg), ms(l.P50), ms(l.P95))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\n", key, g.Count)
		}
	}
	tw.Flush()
	fmt.Fprintf(e.Stdout, "total %d receipts\n", res.Total)
	return ExitOK
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
