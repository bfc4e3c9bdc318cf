package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("approval cancel ID", "admin: cancel a pending request with --reason; the parked call ends with a cancelled receipt", runApprovalCancel)
}

// runApprovalCancel is POST /approvals/{id}/cancel with the admin token
// (SPEC §9). The answer is printed as chiod gives it: the request's final
// status and its cancelled receipt.
func runApprovalCancel(e *Env, args []string) int {
	fs := newFlags(e, "approval cancel")
	r := addRemote(fs, e)
	reason := fs.String("reason", "", "why (required; on the cancelled receipt and shown to the agent)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval cancel", pos, 1); err != nil {
		return fail(e, err)
	}
	switch {
	case strings.TrimSpace(*reason) == "":
		return fail(e, usageErr("approval cancel", "--reason is required (it is on the cancelled receipt)"))
	case len(strings.TrimSpace(*reason)) > kernel.MaxCancelReasonLen:
		// The kernel's own limit, after its own trimming: one chiod would
		// refuse is named here, before any request.
		return fail(e, usageErr("approval cancel", "--reason longer than %d bytes", kernel.MaxCancelReasonLen))
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(time.Minute)
	defer cancel()
	id := pos[0]
	var raw json.RawMessage
	if _, err := r.do(ctx, "POST", "/approvals/"+url.PathEscape(id)+"/cancel", map[string]string{"reason": *reason}, &raw); err != nil {
		return fail(e, err)
	}
	if r.output != "table" {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fail(e, fmt.Errorf("%w: %v", errBadResponse, err))
		}
		printJSON(e.Stdout, v, r.output == "jsonl")
		return ExitOK
	}
	// The answer names the receipt of the cancellation, whichever of the
	// shapes chiod uses for resolutions it is in.
	var res struct {
		ReceiptID  string               `json:"receipt_id"`
		Resolution *approval.Resolution `json:"resolution"`
	}
	_ = json.Unmarshal(raw, &res)
	if res.ReceiptID == "" && res.Resolution != nil {
		res.ReceiptID = res.Resolution.ReceiptID
	}
	line := "cancelled " + shown(id) + ": " + shown(*reason)
	if res.ReceiptID != "" {
		line += " (receipt " + shown(res.ReceiptID) + ")" // chiod's word: escaped
	}
	fmt.Fprintln(e.Stdout, line)
	return ExitOK
}
