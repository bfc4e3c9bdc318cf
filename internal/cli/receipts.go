package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt list", "list receipts, each signature verified: --decision --guard --server --tool --meta --since --until --limit --order --kernel-key", runReceiptList)
	register("receipt show ID", "show one receipt, its signature verified (--kernel-key)", runReceiptShow)
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

// refuseEmpty refuses a filter flag given an empty value: values() drops
// an empty filter as not given, so `--tool "$TOOL"` with TOOL unset listed
// (or counted) the receipts of every tool with the filter silently unapplied
// (refuseEmptyFlags, flag_empty.go).
func (f *filterFlags) refuseEmpty(fs *flag.FlagSet, cmd string) error {
	return refuseEmptyFlags(fs, cmd, filterFlagNames...)
}

// checkValues refuses, as usage errors (exit 2) before chiod is asked, a
// --decision no receipt has, a --since/--until that is neither a duration
// nor an RFC 3339 time, and a --meta that is not KEY or KEY=VALUE:
// chiod's 400 for them exited 1, the code of a receipt that does not
// verify, so an auditor's script read a typo as a forged log. The rules are
// chiod's own (receipt.ParseTimeBound, receipt.ParseMeta).
func (f *filterFlags) checkValues(cmd string) error {
	switch *f.decision {
	case "", receipt.Allow, receipt.Deny, receipt.Cancelled, receipt.Incomplete:
	default:
		return usageErr(cmd, "--decision must be %s, %s, %s or %s, not %q", receipt.Allow, receipt.Deny, receipt.Cancelled, receipt.Incomplete, *f.decision)
	}
	for name, bound := range map[string]string{"since": *f.since, "until": *f.until} {
		// Only the form is checked: chiod counts a duration back from its
		// own clock.
		if _, err := receipt.ParseTimeBound(bound, time.Time{}); err != nil {
			return usageErr(cmd, "--%s: %v", name, err)
		}
	}
	if err := f.checkRange(cmd); err != nil {
		return err
	}
	for _, m := range f.meta {
		if _, err := receipt.ParseMeta(m); err != nil {
			return usageErr(cmd, "%v", err)
		}
	}
	return nil
}

// checkRange refuses what chiod refuses of the bounds together
// (httpapi.FilterFromQuery) whenever this machine's clock cannot change
// the answer: an --until at the epoch or before, given as a time, and an
// empty range (--since not before --until) with both bounds times or both
// durations, which count back from the same instant. A time and a
// duration together are left to chiod, whose clock the duration is on.
func (f *filterFlags) checkRange(cmd string) error {
	now := time.Now()
	since, _ := receipt.ParseTimeBound(*f.since, now)
	until, _ := receipt.ParseTimeBound(*f.until, now)
	if *f.until != "" && isTime(*f.until) && until <= 0 {
		return usageErr(cmd, "--until %s: must be 1970-01-01T00:00:00.001Z or later (no receipt is older)", *f.until)
	}
	if since != 0 && until != 0 && isTime(*f.since) == isTime(*f.until) && since >= until {
		return usageErr(cmd, "--since %s --until %s is an empty range: --since must be before --until", *f.since, *f.until)
	}
	return nil
}

// filterFlagNames are the filter flags (--meta apart: chiod refuses an
// empty one).
var filterFlagNames = []string{"decision", "guard", "server", "tool", "subject", "request-id", "since", "until"}

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

// heldTo is the filters as a receipt.Filter, to hold chiod's answer to
// them. --since and --until are held only when they are times: a duration
// ("1h", "7d") is counted back from chiod's clock, which may be behind or
// ahead of this machine's, so chiod honestly answers receipts a bound
// taken from our clock would exclude. Filters that do not parse were
// refused before (checkValues).
func (f *filterFlags) heldTo(decision string) *receipt.Filter {
	flt := &receipt.Filter{Decision: decision, Guard: *f.guard, Server: *f.server, Tool: *f.tool,
		Subject: *f.subject, RequestID: *f.requestID}
	if t, err := time.Parse(time.RFC3339, *f.since); err == nil {
		flt.Since = t.UnixMilli()
	}
	if t, err := time.Parse(time.RFC3339, *f.until); err == nil {
		flt.Until = t.UnixMilli()
	}
	for _, m := range f.meta {
		if mf, err := receipt.ParseMeta(m); err == nil {
			flt.Meta = append(flt.Meta, mf)
		}
	}
	return flt
}

// pinDurationBound replaces the query's bound name, when it is a duration
// ("1h", "7d"), with the time chiod said it resolved it to (answered), and
// holds the listing to it (*held). A bound given as a time is kept as it
// is; so is a duration chiod did not resolve (an older chiod, which does
// not say).
func pinDurationBound(q url.Values, name, answered string, held *int64) error {
	asked := q.Get(name)
	if asked == "" || answered == "" || isTime(asked) {
		return nil
	}
	t, err := time.Parse(time.RFC3339, answered)
	if err != nil {
		return fmt.Errorf("chiod answered the --%s bound %q, not an RFC 3339 time", name, answered)
	}
	q.Set(name, answered)
	*held = t.UnixMilli()
	return nil
}

// isTime says whether a --since/--until value is a time, not a duration.
func isTime(bound string) bool {
	_, err := time.Parse(time.RFC3339, bound)
	return err == nil
}

func runReceiptList(e *Env, args []string) int {
	fs := newFlags(e, "receipt list")
	r := addRemote(fs, e)
	filters := addFilterFlags(fs)
	limit := fs.Int("limit", 100, "at most this many receipts")
	order := fs.String("order", "asc", "asc (oldest first) or desc (newest first)")
	stillPending := fs.Bool("still-pending", false, "only suspensions (incomplete receipts) whose approval is still pending now")
	keyText := fs.String("kernel-key", "", "the kernel's public key (ed25519:…) you trust; default: ask the server")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("receipt list", pos, 0); err != nil {
		return fail(e, err)
	}
	if err := filters.refuseEmpty(fs, "receipt list"); err != nil {
		return fail(e, err)
	}
	if err := filters.checkValues("receipt list"); err != nil {
		return fail(e, err)
	}
	// A pin given an empty value would be no pin: refused (flag_empty.go).
	if err := refuseEmptyFlags(fs, "receipt list", "kernel-key"); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	if *limit < 1 {
		return fail(e, usageErr("receipt list", "--limit must be ≥ 1"))
	}
	if *order != "asc" && *order != "desc" {
		return fail(e, usageErr("receipt list", "--order must be asc or desc"))
	}
	q := filters.values()
	if *stillPending {
		if d := *filters.decision; d != "" && d != receipt.Incomplete {
			return fail(e, usageErr("receipt list", "--still-pending lists incomplete receipts; it cannot be combined with --decision %s", d))
		}
		q.Set("decision", receipt.Incomplete)
	}
	q.Set("order", *order)
	asked := filters.heldTo(q.Get("decision"))
	ctx, cancel := ctxTimeout(5 * time.Minute)
	defer cancel()
	key, err := trustedKernelKey(ctx, e, r, *keyText)
	if err != nil {
		return fail(e, err)
	}
	all := []*listed{}
	var lastSeq uint64 // of the receipt before, across pages
	statuses := &approvalStatuses{r: r, known: map[string]string{}}
	// more says whether --limit cut the list: "match" when receipts beyond
	// it match the filters, "may match" when they may. A list cut short
	// must not pass for every receipt the filters match.
	more := ""
	for len(all) < *limit {
		// With --still-pending a page may be mostly filtered out: ask for
		// full pages and stop at the limit.
		n := *limit - len(all)
		if *stillPending {
			n = 1000
		}
		q.Set("limit", strconv.Itoa(min(n, 1000)))
		var page struct {
			Receipts   []json.RawMessage `json:"receipts"`
			NextCursor string            `json:"next_cursor"`
			Since      string            `json:"since"`
			Until      string            `json:"until"`
		}
		if _, err := r.do(ctx, "GET", "/v1/receipts?"+q.Encode(), nil, &page); err != nil {
			return fail(e, err)
		}
		// A bound given as a duration is counted back from chiod's clock
		// on each request: the listing keeps the bounds chiod resolved for
		// it, asking later pages for them and holding receipts to them,
		// or its window would slide while it pages.
		if err := pinDurationBound(q, "since", page.Since, &asked.Since); err != nil {
			return fail(e, fmt.Errorf("receipt list: %w; nothing listed", err))
		}
		if err := pinDurationBound(q, "until", page.Until, &asked.Until); err != nil {
			return fail(e, fmt.Errorf("receipt list: %w; nothing listed", err))
		}
		rows := make([]*listed, 0, len(page.Receipts))
		for _, raw := range page.Receipts {
			// One receipt that is not the kernel's refuses the whole list,
			// before anything is printed: a forgery is never shown among
			// real receipts.
			rc, err := servedReceipt(raw, key)
			if err != nil {
				return fail(e, fmt.Errorf("receipt list: %w; nothing listed (chio receipt verify --all checks the whole log)", err))
			}
			if !asked.Match(rc) {
				return fail(e, fmt.Errorf("receipt list: receipt %s (seq %d) from the server does not match the filters asked for: chiod answered a receipt the query excludes; nothing listed", rc.ID, rc.Seq))
			}
			// Pages are in seq order (--order): a receipt repeated, or
			// out of place, would be counted and shown twice or misread.
			if lastSeq != 0 && (*order == "asc" && rc.Seq <= lastSeq || *order == "desc" && rc.Seq >= lastSeq) {
				return fail(e, fmt.Errorf("receipt list: receipt %s (seq %d) from the server comes out of seq order (%s) after seq %d: chiod repeated or reordered receipts; nothing listed", rc.ID, rc.Seq, *order, lastSeq))
			}
			lastSeq = rc.Seq
			rows = append(rows, &listed{raw: raw, rc: rc})
		}
		// The status of each suspension now: the table shows it, and
		// --still-pending keeps only those still waiting.
		if *stillPending || r.output == "table" {
			if err := statuses.fill(ctx, rows); err != nil {
				if *stillPending {
					return fail(e, fmt.Errorf("reading approval status: %w", err))
				}
				// Escaped as fail escapes errors: it quotes the answer.
				fmt.Fprintf(e.Stderr, "chio: cannot read approval status (%s); STATUS shows ?\n", shown(err.Error()))
			}
		}
		for _, l := range rows {
			if !*stillPending || l.status == approval.StatusPending {
				if len(all) == *limit {
					more = "match" // one the limit left out
					continue
				}
				all = append(all, l)
			}
		}
		if page.NextCursor == "" {
			break
		}
		// chiod's next_cursor is the seq of the page's last receipt, set
		// only when more are left: any other, above all one on a page with
		// no receipt, would have the listing ask again without end.
		if len(page.Receipts) == 0 || page.NextCursor != strconv.FormatUint(lastSeq, 10) {
			return fail(e, fmt.Errorf("receipt list: chiod answered a page of %d receipts with next_cursor %q, not the seq of its last receipt; nothing listed", len(page.Receipts), page.NextCursor))
		}
		// Stopped at the limit with receipts left on chiod (next_cursor is
		// set only when there are): they match, or with --still-pending
		// they may (their status is not read).
		if len(all) == *limit && more == "" {
			more = "match"
			if *stillPending {
				more = "may match"
			}
		}
		q.Set("cursor", page.NextCursor)
	}
	switch r.output {
	case "json":
		raws := make([]json.RawMessage, len(all))
		for i, l := range all {
			raws[i] = l.raw
		}
		printJSON(e.Stdout, raws, false)
	case "jsonl":
		for _, l := range all {
			fmt.Fprintln(e.Stdout, string(l.raw))
		}
	default:
		tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tDECISION\tGUARD\tSERVER/TOOL\tRECEIPT\tSTATUS\tDETAIL")
		for _, l := range all {
			rc := l.rc
			// Every column is shown escaped: reason and tool_error are the
			// tool's own text, and a tab or escape sequence in any of them
			// could break the table or rewrite the terminal.
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", rc.Seq,
				time.UnixMilli(rc.Timestamp).UTC().Format(time.RFC3339), shown(rc.Decision.Verdict), shown(dash(rc.Decision.Guard)),
				shown(rc.ToolServer), shown(rc.ToolName), shown(rc.ID), shown(dash(l.status)), detail(rc))
		}
		tw.Flush()
	}
	fmt.Fprintf(e.Stderr, "%d receipts, each signature VERIFIED with kernel key %s\n"+
		"not checked: that chiod listed every receipt the filters match (each listed one matches them), their inclusion in the log (chio receipt verify --all),\n"+
		"             and the STATUS column (each approval's status now, chiod's word)\n", len(all), key)
	if more != "" {
		fmt.Fprintf(e.Stderr, "chio: more receipts %s the filters: only the first %d are listed (raise --limit or narrow the filters)\n", more, *limit)
	}
	return ExitOK
}

// listed is one receipt of `receipt list`; status is, for a suspension
// (an incomplete receipt of an approval request), that request's status now.
type listed struct {
	raw    json.RawMessage
	rc     *receipt.Receipt
	status string
}

// approvalStatuses reads the current status of approval requests, a few
// at a time, remembering what it read.
type approvalStatuses struct {
	r     *remote
	known map[string]string
}

func (s *approvalStatuses) fill(ctx context.Context, rows []*listed) error {
	var ids []string
	for _, l := range rows {
		if id := approvalRequestID(l.rc); id != "" {
			if _, ok := s.known[id]; !ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	got := make([]string, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var v struct {
				Status string `json:"status"`
			}
			_, errs[i] = s.r.do(ctx, "GET", "/approvals/"+url.PathEscape(id), nil, &v)
			got[i] = v.Status
		})
	}
	wg.Wait()
	var first error
	for i, id := range ids {
		if errs[i] != nil {
			first = cmp.Or(first, errs[i])
			s.known[id] = "?"
			continue
		}
		s.known[id] = got[i]
	}
	for _, l := range rows {
		if id := approvalRequestID(l.rc); id != "" {
			l.status = s.known[id]
		}
	}
	return first
}

// approvalRequestID is the approval request a suspension (an incomplete
// receipt) parked, or "" when rc is not one. Other incomplete receipts,
// such as a tool failure's, have no approval_request_id: the key must be
// present and a non-empty string, since MetaString of a missing key is
// "null", an id chiod does not know.
func approvalRequestID(rc *receipt.Receipt) string {
	if rc.Decision.Verdict != receipt.Incomplete {
		return ""
	}
	id, ok := rc.Metadata["approval_request_id"].(string)
	if !ok {
		return ""
	}
	return id
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detail is the one column a person scans: reason, or notable metadata,
// shown escaped and cut to 100 runes.
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
	// Escape first, then cut at a rune boundary: cutting first could split
	// a rune (invalid UTF-8) or an escape.
	s := []rune(shown(strings.Join(parts, "; ")))
	if len(s) > 100 {
		s = append(s[:97], []rune("...")...)
	}
	return string(s)
}

func runReceiptShow(e *Env, args []string) int {
	fs := newFlags(e, "receipt show")
	r := addRemote(fs, e)
	keyText := fs.String("kernel-key", "", "the kernel's public key (ed25519:…) you trust; default: ask the server")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("receipt show", pos, 1); err != nil {
		return fail(e, err)
	}
	// A pin given an empty value would be no pin: refused (flag_empty.go).
	if err := refuseEmptyFlags(fs, "receipt show", "kernel-key"); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	key, err := trustedKernelKey(ctx, e, r, *keyText)
	if err != nil {
		return fail(e, err)
	}
	id := pos[0]
	var raw json.RawMessage
	if _, err := r.do(ctx, "GET", "/v1/receipts/"+url.PathEscape(id), nil, &raw); err != nil {
		return fail(e, err)
	}
	rc, err := servedReceipt(raw, key)
	if err != nil {
		return fail(e, fmt.Errorf("receipt show: %w; not shown", err))
	}
	if rc.ID != id {
		return fail(e, fmt.Errorf("receipt show: the server answered receipt %s for %s; not shown", rc.ID, id))
	}
	if r.output == "jsonl" {
		fmt.Fprintln(e.Stdout, string(raw))
	} else {
		var v any
		_ = json.Unmarshal(raw, &v)
		printJSON(e.Stdout, v, false)
	}
	fmt.Fprintf(e.Stderr, "VERIFIED receipt %s (seq %d): signature by kernel key %s\n"+
		"not checked: its inclusion in the log (chio receipt verify %s)\n", shown(rc.ID), rc.Seq, key, shown(rc.ID))
	return ExitOK
}
