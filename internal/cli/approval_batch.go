package cli

// chio approval batch create / list / revoke: standing approvals.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func runBatchCreate(e *Env, args []string) int {
	fs := newFlags(e, "approval batch create")
	r := addRemote(fs, e)
	keyFile := fs.String("key", "", "approver private key (PKCS#8 PEM)")
	server := fs.String("server", "", "server pattern: exact, * or prefix*")
	tool := fs.String("tool", "", "tool pattern: exact, * or prefix*")
	subject := fs.String("subject", "", "only calls by this agent key (default: any agent)")
	maxCalls := fs.Int64("max-calls", 0, "at most this many calls (0: no count limit)")
	perCall := fs.String("max-amount-per-call", "", "UNITS:CURRENCY cap on the amount each call's arguments move (its tool's declared amount; a call with none, or in another currency, is not covered)")
	total := fs.String("max-total", "", "UNITS:CURRENCY cap on the sum of the amounts the covered calls move")
	window := fs.Duration("for", 0, "how long the standing approval lasts, from now (required, 1s to 720h)")
	kernelKey := fs.String("kernel-key", "", "the kernel's public key (ed25519:…) the approval is for; refused if the server's differs (default: ask the server)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval batch create", pos, 0); err != nil {
		return fail(e, err)
	}
	for _, f := range []struct {
		missing bool
		name    string
	}{{*keyFile == "", "--key FILE"}, {*server == "", "--server PATTERN"}, {*tool == "", "--tool PATTERN"}, {*window == 0, "--for DURATION"}} {
		if f.missing {
			return fail(e, usageErr("approval batch create", "%s is required", f.name))
		}
	}
	// Empty, these would be taken for no limit and sign a wider standing
	// approval than the approver wrote: refused before anything is signed.
	if err := refuseEmptyFlags(fs, "approval batch create", "subject", "max-amount-per-call", "max-total", "kernel-key"); err != nil {
		return fail(e, err)
	}
	if err := approval.CheckPattern(*server); err != nil {
		return fail(e, usageError("--server: pattern "+err.Error()))
	}
	if err := approval.CheckPattern(*tool); err != nil {
		return fail(e, usageError("--tool: pattern "+err.Error()))
	}
	switch {
	case *window < time.Second || *window > approval.MaxBatchWindow:
		// not_before and not_after are whole seconds: a shorter window
		// can end as it begins (approval.MinApprovalTTL likewise).
		return fail(e, usageError("--for must be in [1s, 720h]"))
	case *maxCalls < 0:
		return fail(e, usageError("--max-calls must be ≥ 1 (or 0 for no limit)"))
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	var pinned *keys.PublicKey
	if *kernelKey != "" {
		k, err := keys.ParsePublicKey(*kernelKey)
		if err != nil {
			return fail(e, usageError("--kernel-key: "+err.Error()))
		}
		pinned = &k
	}
	key, err := e.loadKey(*keyFile)
	if err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	audience, err := batchAudience(ctx, r, pinned)
	if err != nil {
		return fail(e, err)
	}
	now := time.Now()
	b := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: key.Public().String(),
		Audience: audience.String(), ServerPattern: *server, ToolPattern: *tool, NotBefore: now.Unix(), NotAfter: now.Add(*window).Unix()}
	if *subject != "" {
		if _, err := keys.ParsePublicKey(*subject); err != nil {
			return fail(e, usageError("--subject: "+err.Error()))
		}
		b.Subject = *subject
	}
	if *maxCalls > 0 {
		b.MaxCalls = maxCalls
	}
	if b.MaxAmountPerCall, err = parseAmount(*perCall); err != nil {
		return fail(e, usageError("--max-amount-per-call: "+err.Error()))
	}
	if b.MaxTotalAmount, err = parseAmount(*total); err != nil {
		return fail(e, usageError("--max-total: "+err.Error()))
	}
	raw, err := b.Sign(key)
	if err != nil {
		return fail(e, err)
	}
	var res struct {
		ID    string          `json:"id"`
		Token json.RawMessage `json:"token"`
	}
	body := append(append([]byte(`{"token":`), raw...), '}')
	if _, err := r.send(ctx, "POST", "/approvals/batch", body, nil, &res, http.StatusCreated); err != nil {
		return fail(e, err)
	}
	if r.output != "table" {
		printJSON(e.Stdout, res, r.output == "jsonl")
		return ExitOK
	}
	fmt.Fprintln(e.Stdout, shown(res.ID))
	fmt.Fprintf(e.Stderr, "standing approval for %s/%s at kernel %s until %s; it covers:\n%srevoke with: chio approval batch revoke %s\n",
		*server, *tool, audience, time.Unix(b.NotAfter, 0).UTC().Format(time.RFC3339), batchScope(b), shown(res.ID))
	return ExitOK
}

// batchAudience is the kernel a standing approval is signed for: the
// kernel_key chiod gives at GET /healthz (the route receipt verify asks).
// The token is bound to that one kernel, so an approver's key trusted at
// staging and production cannot carry a staging approval to production.
// With --kernel-key (pinned) the server must give that very key: signing
// for whatever kernel answers at --url would let a mistyped or redirected
// address turn the approval into one for another deployment.
func batchAudience(ctx context.Context, r *remote, pinned *keys.PublicKey) (keys.PublicKey, error) {
	var h struct {
		KernelKey string `json:"kernel_key"`
	}
	if _, err := r.do(ctx, "GET", "/healthz", nil, &h); err != nil {
		return keys.PublicKey{}, err
	}
	served, err := keys.ParsePublicKey(h.KernelKey)
	if err != nil {
		return served, fmt.Errorf("bad response from chiod: its kernel_key: %w", err)
	}
	if pinned != nil && served.String() != pinned.String() {
		return served, fmt.Errorf("chiod at %s is kernel %s, not --kernel-key %s: nothing signed or sent", shown(r.base()), served, *pinned)
	}
	return served, nil
}

// parseAmount reads UNITS:CURRENCY ("" means no limit).
func parseAmount(s string) (*approval.Amount, error) {
	if s == "" {
		return nil, nil
	}
	u, cur, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(u, 10, 64)
	if !ok || err != nil || n < 0 || n > 1<<53 || cur == "" || strings.ToUpper(cur) != cur {
		return nil, fmt.Errorf("want UNITS:CURRENCY, e.g. 500:USD")
	}
	return &approval.Amount{Units: n, Currency: cur}, nil
}

// batchPage is one page of GET /approvals/batch.
type batchPage struct {
	Batches   []kernel.BatchView `json:"batches"`
	NextAfter string             `json:"next_after"`
}

// listAllBatches reads every standing approval, a page of 1,000 at a time
// (chiod keeps every batch ever created, and answers in pages).
func listAllBatches(ctx context.Context, r *remote) (*batchPage, error) {
	all := &batchPage{Batches: []kernel.BatchView{}}
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		var page batchPage
		if _, err := r.do(ctx, "GET", "/approvals/batch?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all.Batches = append(all.Batches, page.Batches...)
		if page.NextAfter == "" {
			return all, nil
		}
		if page.NextAfter <= after {
			return nil, fmt.Errorf("bad response from chiod: next_after %q does not move past %q", page.NextAfter, after)
		}
		after = page.NextAfter
	}
}

func runBatchList(e *Env, args []string) int {
	fs := newFlags(e, "approval batch list")
	r := addRemote(fs, e)
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval batch list", pos, 0); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	list, err := listAllBatches(ctx, r)
	if err != nil {
		return fail(e, err)
	}
	// A batch's id, patterns, keys and currencies are chosen by its signer,
	// and one stored before the kernel refused control characters in them
	// may hold some: everything from a batch is printed escaped (shown,
	// printShownJSON), so a carriage return or an escape sequence cannot
	// repaint an unlimited */* batch as a harmless row.
	switch r.output {
	case "json":
		printJSON(e.Stdout, list.Batches, false)
		return ExitOK
	case "jsonl":
		for _, b := range list.Batches {
			printJSON(e.Stdout, b, true)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAPPROVER\tSERVER/TOOL\tSUBJECT\tUSED\tLIMITS\tFROM\tUNTIL\tREVOKED")
	for _, bv := range list.Batches {
		var b approval.BatchToken
		if err := json.Unmarshal(bv.Token, &b); err != nil {
			return fail(e, fmt.Errorf("bad response from chiod: %w", err))
		}
		var limits []string
		if b.MaxCalls != nil {
			limits = append(limits, fmt.Sprintf("calls≤%d", *b.MaxCalls))
		}
		if a := b.MaxAmountPerCall; a != nil {
			limits = append(limits, fmt.Sprintf("each≤%d %s", a.Units, shown(a.Currency)))
		}
		if a := b.MaxTotalAmount; a != nil {
			limits = append(limits, fmt.Sprintf("total≤%d %s", a.Units, shown(a.Currency)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%d calls, %d units\t%s\t%s\t%s\t%t\n", shown(b.ID), shown(clip(b.Approver, 20)),
			shown(b.ServerPattern), shown(b.ToolPattern), shown(dash(clip(b.Subject, 20))), bv.Usage.Calls, bv.Usage.TotalAmount,
			dash(strings.Join(limits, ", ")), time.Unix(b.NotBefore, 0).UTC().Format(time.RFC3339),
			time.Unix(b.NotAfter, 0).UTC().Format(time.RFC3339), bv.Revoked)
	}
	tw.Flush()
	return ExitOK
}

func runBatchRevoke(e *Env, args []string) int {
	fs := newFlags(e, "approval batch revoke")
	r := addRemote(fs, e)
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval batch revoke", pos, 1); err != nil {
		return fail(e, err)
	}
	// Ids the kernel accepts today (approval.ValidID) go in the path, which
	// every chiod serves. A batch stored before that rule may have an id
	// the path cannot carry (too long, "." or "..", control characters):
	// it is named in the query instead (DELETE /approvals/batch?id=).
	path := "/approvals/batch/" + url.PathEscape(pos[0])
	if !approval.ValidID(pos[0]) {
		path = "/approvals/batch?" + url.Values{"id": {pos[0]}}.Encode()
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	if _, err := r.do(ctx, "DELETE", path, nil, nil); err != nil {
		return fail(e, err)
	}
	fmt.Fprintf(e.Stdout, "%s revoked\n", shown(pos[0]))
	return ExitOK
}
