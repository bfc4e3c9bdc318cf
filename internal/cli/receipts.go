package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt list", "list receipts: --decision --guard --server --tool --meta --since --until --limit --order", runReceiptList)
	register("receipt show", "show one receipt", runReceiptShow)
}

// filterFlags are the filters `receipt list` and `receipt stats` share;
// they map one to one onto GET /v1/receipts query parameters.
type filterFlags struct {
	decision, guard, server, tool, subject, requestID, since, until *string
	meta                                                            multi
}

func addFilterFlags(fs *flag.FlagSet) *filterFlags {
	f := &filterFlags{
		decision:  fs.String("decision", "", "allow | deny | cancelled | incomplete"),
		guard:     fs.String("guard", "", "denying guard (e.g. human-approval, approval-timeout)"),
		server:    fs.String("server", "", "tool server"),
		tool:      fs.String("tool", "", "tool name"),
		subject:   fs.String("subject", "", "agent key"),
		requestID: fs.String("request-id", "", "one call's request id"),
		since:     fs.String("since", "", "24h, 7d or RFC 3339"),
		until:     fs.String("until", "", "24h, 7d or RFC 3339"),
	}
	fs.Var(&f.meta, "meta", "KEY or KEY=VALUE in metadata (repeatable)")
	return f
}

func (f *filterFlags) values() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"decision": *f.decision, "guard": *f.guard, "server": *f.server,
		"tool": *f.tool, "subject": *f.subject, "request_id": *f.requestID, "since": *f.since, "until": *f.until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for _, m := range f.meta {
		q.Add("meta", m)
	}
	return q
}

func runReceiptList(e *Env, args []string) int {
	fs := newFlags(e, "receipt list")
	r := addRemote(fs, e)
	filters := addFilterFlags(fs)
	limit := fs.Int("limit", 100, "at most this many receipts")
	order := fs.String("order", "asc", "asc (oldest first) or desc (newest first)")
	if _, err := parse(fs, args); err != nil {
		return ExitUsage
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	if *limit < 1 {
		return fail(e, usageError("--limit must be ≥ 1"))
	}
	if *order != "asc" && *order != "desc" {
		return fail(e, usageError("--order must be asc or desc"))
	}
	q := filters.values()
	q.Set("order", *order)
	ctx, cancel := ctxTimeout(5 * time.Minute)
	defer cancel()
	all := []json.RawMessage{}
	for len(all) < *limit {
		q.Set("limit", strconv.Itoa(min(*limit-len(all), 1000)))
		var page struct {
			Receipts   []json.RawMessage `json:"receipts"`
			NextCursor string            `json:"next_cursor"`
		}
		if _, err := r.do(ctx, "GET", "/v1/receipts?"+q.Encode(), nil, &page); err != nil {
			return fail(e, err)
		}
		all = append(all, page.Receipts...)
		if page.NextCursor == "" {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	switch r.output {
	case "json":
		printJSON(e.Stdout, all, false)
	case "jsonl":
		for _, raw := range all {
			fmt.Fprintln(e.Stdout, string(raw))
		}
	default:
		tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tDECISION\tGUARD\tSERVER/TOOL\tRECEIPT\tDETAIL")
		for _, raw := range all {
			rc, err := receipt.Parse(raw)
			if err != nil {
				return fail(e, err)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s/%s\t%s\t%s\n", rc.Seq,
				time.UnixMilli(rc.Timestamp).UTC().Format(time.RFC3339), rc.Decision.Verdict, dash(rc.Decision.Guard),
				rc.ToolServer, rc.ToolName, rc.ID, detail(rc))
		}
		tw.Flush()
		fmt.Fprintf(e.Stderr, "%d receipts\n", len(all))
	}
	return ExitOK
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detail is the one column a person scans: reason, or notable metadata.
func detail(rc *receipt.Receipt) string {
	var parts []string
	if rc.Decision.Reason != "" {
		parts = append(parts, rc.Decision.Reason)
	}
	for _, k := range []string{"approval_request_id", "approver_display_name", "batch_approval_id", "auto_approved", "tool_error"} {
		if v, ok := rc.Metadata[k]; ok {
			parts = append(parts, k+"="+receipt.MetaString(v))
		}
	}
	s := strings.Join(parts, "; ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

func runReceiptShow(e *Env, args []string) int {
	fs := newFlags(e, "receipt show")
	r := addRemote(fs, e)
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if len(pos) != 1 {
		return fail(e, usageError("usage: chio receipt show ID"))
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	var raw json.RawMessage
	if _, err := r.do(ctx, "GET", "/v1/receipts/"+url.PathEscape(pos[0]), nil, &raw); err != nil {
		return fail(e, err)
	}
	if r.output == "jsonl" {
		fmt.Fprintln(e.Stdout, string(raw))
		return ExitOK
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	printJSON(e.Stdout, v, false)
	return ExitOK
}
