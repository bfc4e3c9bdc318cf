package receipt

import (
	"fmt"
	"strconv"
	"strings"
)

// The verifier's checks of what approved a call (verify_log.go): the
// deciding token, its evidence, and standing (batch) approvals.

// The kernel's limits on an approval token's time fields (approval/limits.go
// MaxApprovalTTL and MaxSkew) and on a standing approval's window
// (approval.MaxBatchWindow); approval imports receipt, so they are
// repeated here and must move together.
const (
	maxTokenLifetime = 3600           // s
	maxTokenSkew     = 60             // s
	maxBatchWindow   = 30 * 24 * 3600 // s
)

// tokenTime says why a token's time fields could not have passed
// approval.Verify for this request, or "". The kernel checked each vote at
// its arrival, after the call was parked (the incomplete receipt) and no
// later than the final receipt: so the token expired after the first and
// was issued at most maxTokenSkew after the second.
func tokenTime(t tokenView, link *chainLink) string {
	switch {
	case t.ExpiresAt <= t.IssuedAt || t.ExpiresAt-t.IssuedAt > maxTokenLifetime:
		return fmt.Sprintf("has lifetime %d s (issued_at %d, expires_at %d), not in (0, %d]", t.ExpiresAt-t.IssuedAt, t.IssuedAt, t.ExpiresAt, maxTokenLifetime)
	case t.ExpiresAt*1000 <= link.rc.Timestamp:
		return fmt.Sprintf("expired (expires_at %d) before the call was parked (incomplete receipt %s at %d ms)", t.ExpiresAt, link.id, link.rc.Timestamp)
	case link.final != "" && t.IssuedAt*1000 > link.finalAt+maxTokenSkew*1000:
		return fmt.Sprintf("was issued (issued_at %d) more than %d s after the final receipt %s (%d ms)", t.IssuedAt, maxTokenSkew, link.final, link.finalAt)
	}
	return ""
}

// autoTime says why final receipt rc, decided by the kernel's own
// advisory vote (auto), could not have been decided at the deadline of
// suspension link, or "". The kernel casts that vote only once the
// request's deadline has passed, and a deadline only moves later than the
// one the suspension records (escalations, approvers told late), so rc's
// timestamp is at or after it; maxTokenSkew allows for a replica whose
// clock lags resuming the call. A suspension with no readable deadline is
// not judged.
func autoTime(auto bool, rc *Receipt, link *chainLink) string {
	if !auto {
		return ""
	}
	deadline, err := strconv.ParseInt(metaStr(link.rc, "deadline"), 10, 64)
	if err != nil || deadline < -ijsonMax || deadline > ijsonMax { // ms of ±2^53 s still fit an int64
		return ""
	}
	if rc.Timestamp < (deadline-maxTokenSkew)*1000 {
		return fmt.Sprintf("auto_approved at %d ms, before the deadline (%d) its suspension %s recorded: the kernel's advisory vote comes only after it",
			rc.Timestamp, deadline, link.id)
	}
	return ""
}

// approvalRecord checks one approval evidence record as it is read: every
// receipt is before it (export.go), so the finals naming its request are
// known, and nothing of it is kept but the line it was on, and that only
// for a request a signed receipt names.
func (v *verifier) approvalRecord(ev *evidenceItem) {
	finals := v.approvalFinals[ev.id]
	if v.byApproval[ev.id] != nil || len(finals) > 0 {
		if first, dup := v.approvalEvidence[ev.id]; dup {
			v.problem(ev.line, nil, "evidence for %s repeated (first at line %d)", ev.id, first)
			return
		}
		v.approvalEvidence[ev.id] = ev.line
	}
	for _, f := range finals {
		v.approval(f, ev)
		f.checked = true
	}
	v.evidence(ev)
}

// batchRecord checks one batch evidence record as it is read against every
// receipt that names it (all before it). The kernel exports a batch token
// only for the receipts that name it, so one named by none was added to
// the file; unchecked, a forged one would pass unnoticed.
func (v *verifier) batchRecord(ev *evidenceItem) {
	u := v.batchUses[ev.id]
	switch {
	case u == nil && ev.tokens[0].err != nil:
		v.problem(ev.line, nil, "batch %s: no receipt names it, and %v", ev.id, ev.tokens[0].err)
	case u == nil:
		v.problem(ev.line, nil, "batch %s: no receipt names it", ev.id)
	case u.evidenceLine != 0:
		v.problem(ev.line, nil, "evidence for %s repeated (first at line %d)", ev.id, u.evidenceLine)
	default:
		u.evidenceLine = ev.line
		for _, f := range u.finals {
			v.batch(f, ev)
			f.checked = true
		}
		// The kernel counts each call against max_calls in the commit of
		// its allow, so it never writes more receipts naming a batch than
		// the calls its approver signed for. An export holds every
		// receipt up to its last (or fewer), so more here is a call no
		// one approved.
		if ct := ev.tokens[0]; ct.err == nil && ct.tok.MaxCalls != nil && int64(len(u.finals)) > *ct.tok.MaxCalls {
			v.problem(ev.line, nil, "batch %s: %d receipts name it, more than its max_calls of %d", ev.id, len(u.finals), *ct.tok.MaxCalls)
		}
	}
}

func (v *verifier) approval(f *final, ev *evidenceItem) {
	ev.used = true
	for _, ct := range ev.tokens {
		if ct.err != nil || ct.tok.ID != f.tokenID {
			continue
		}
		want := "approved"
		if f.rc.Decision.Verdict == Deny && f.rc.Decision.Guard == "human-approval" {
			want = "denied"
		}
		switch {
		case (f.rc.Decision.Verdict == Allow || want == "denied") && ct.tok.Decision != want:
			v.problem(f.line, f.rc, "receipt is %s but the deciding token %s says %q", f.rc.Decision.Verdict, ct.tok.ID, ct.tok.Decision)
		case f.rc.Decision.Verdict == Deny && ct.tok.Decision != want:
			// Any other guard's deny that names a deciding token stopped a
			// call a person (or the deadline's advisory vote) approved:
			// resume, recoverApproved. Only a human-approval deny is
			// decided by a denial (kernel recordVote).
			v.problem(f.line, f.rc, "receipt is deny by guard %s (an approved call the kernel stopped) but the deciding token %s says %q: only a human-approval deny is decided by a denial",
				f.rc.Decision.Guard, ct.tok.ID, ct.tok.Decision)
		}
		if f.approver != "" && f.approver != ct.tok.Approver {
			v.problem(f.line, f.rc, "receipt names approver %s but token %s is signed by %s", f.approver, ct.tok.ID, ct.tok.Approver)
		}
		switch kernelVote := ct.tok.Approver == v.opts.KernelKey.String(); {
		case kernelVote && !f.auto:
			v.problem(f.line, f.rc, "token %s is signed by the kernel key but the receipt is not flagged auto_approved", ct.tok.ID)
		case !kernelVote && f.auto:
			// The kernel flags a receipt auto_approved only when its own
			// advisory vote decided it (chainReceipt): a person's
			// decision so flagged would be filed as no one's.
			v.problem(f.line, f.rc, "receipt is flagged auto_approved but its deciding token %s is signed by %s, not the kernel key: only the kernel's advisory vote auto-approves", ct.tok.ID, ct.tok.Approver)
		}
		v.amendment(*f, ct.tok)
		v.vouch(*f, ev, ct.tok)
		return
	}
	v.problem(f.line, f.rc, "approval evidence for %s (line %d) holds no valid token %s", ev.id, ev.line, f.tokenID)
}

// evidence checks every token of one approval request against the chain
// and against what the final receipt signs about the votes.
func (v *verifier) evidence(ev *evidenceItem) {
	link := v.byApproval[ev.id]
	autoOK := link != nil && v.autoFinal[link.final]
	seen := map[string]string{}
	for _, ct := range ev.tokens {
		if ct.err != nil {
			v.problem(ev.line, nil, "approval %s: %v", ev.id, ct.err)
			continue
		}
		t := ct.tok
		signed := v.accounted(ev, t, seen)
		if signed {
			v.rep.Tokens++
		}
		if t.RequestID != ev.id {
			v.problem(ev.line, nil, "approval %s: token %s is for approval request %s", ev.id, t.ID, t.RequestID)
		}
		// trusted_approvers is the export's unsigned word (the approvers
		// trusted when the request was last reconciled); the signed final
		// receipt (accounted) is what vouches for an approver, also one a
		// later reload removed after they voted. This check only keeps the
		// file consistent with itself for votes no signed list names.
		if !signed && !ev.trusted[t.Approver] && !(autoOK && t.Approver == v.opts.KernelKey.String()) {
			v.problem(ev.line, nil, "approval %s: approver %s of token %s is not in trusted_approvers", ev.id, t.Approver, t.ID)
		}
		// The kernel's own vote (auto_approve_advisory) is recorded only by
		// the deadline path, in the commit it resolves the request with: it
		// is the deciding token (approval checks it is flagged
		// auto_approved), never one vote among a person's.
		if t.Approver == v.opts.KernelKey.String() && ev.final.rc != nil && t.ID != ev.final.tokenID {
			v.problem(ev.line, nil, "approval %s: token %s is signed by the kernel key, but it is not the deciding token %s of final receipt %s: the kernel's advisory vote only ever decides a request",
				ev.id, t.ID, ev.final.tokenID, ev.final.rc.ID)
		}
		if link == nil {
			continue // reported once, below the loop
		}
		if t.GovernedIntentHash != link.params {
			v.problem(ev.line, nil, "approval %s: token %s binds governed_intent_hash %s, but incomplete receipt %s has parameter_hash %s", ev.id, t.ID, t.GovernedIntentHash, link.id, link.params)
		}
		if t.Subject != link.subject {
			v.problem(ev.line, nil, "approval %s: token %s is for subject %s, the call's subject is %s", ev.id, t.ID, t.Subject, link.subject)
		}
		if t.Approver == link.subject {
			// approval.Verify: ErrSelfApproval, never counted by the kernel.
			v.problem(ev.line, nil, "approval %s: token %s is signed by the call's own agent %s: an agent cannot approve its own call", ev.id, t.ID, t.Approver)
		}
		if why := tokenTime(t, link); why != "" {
			v.problem(ev.line, nil, "approval %s: token %s %s", ev.id, t.ID, why)
		}
	}
	if link == nil {
		// Also for a record with no votes: no signed receipt names its request.
		v.problem(ev.line, nil, "approval %s: no incomplete receipt in the log for this request", ev.id)
	}
	v.signedMissing(ev, seen)
}

func (v *verifier) batch(f *final, ev *evidenceItem) {
	ct := ev.tokens[0]
	if ct.err != nil {
		if !ev.used {
			v.problem(ev.line, nil, "batch %s: %v", ev.id, ct.err)
		}
		ev.used = true
		return
	}
	if !ev.used {
		v.rep.BatchTokens++
		ev.used = true
		if ct.tok.ID != ev.id {
			v.problem(ev.line, nil, "batch evidence %s holds token %s", ev.id, ct.tok.ID)
		}
	}
	if f.approver != ct.tok.Approver {
		v.problem(f.line, f.rc, "receipt names approver %s but batch token %s is signed by %s", f.approver, ct.tok.ID, ct.tok.Approver)
	}
	if why := batchCovers(ct.tok, f.rc); why != "" {
		v.problem(f.line, f.rc, "batch token %s does not cover this receipt: %s", ct.tok.ID, why)
	}
}

// batchCovers says why batch token t could not have covered receipt rc
// (approval.Batch.Covers: subject if set, server and tool patterns, the
// window; kernel.batchSigners: an approver that is not the subject; approval.VerifyBatch: an audience, when the token has one, that
// is the kernel which signed rc; a window in (0, 30 days]), or "". The kernel judges the window when the allow commits, at
// or after the receipt's timestamp (kernel/batch.go): so ts < not_after,
// and not_before may lie a little after ts (maxTokenSkew allows for it).
func batchCovers(t tokenView, rc *Receipt) string {
	ts := rc.Timestamp / 1000
	switch {
	case t.NotAfter <= t.NotBefore || t.NotAfter-t.NotBefore > maxBatchWindow:
		// VerifyBatch refuses such a window when the batch is created.
		return fmt.Sprintf("its window [%d, %d) is %d s, not in (0, %d]", t.NotBefore, t.NotAfter, t.NotAfter-t.NotBefore, maxBatchWindow)
	case t.Audience != "" && t.Audience != rc.KernelKey:
		return fmt.Sprintf("it was signed for kernel %s, the receipt's is %s", t.Audience, rc.KernelKey)
	case t.Subject != "" && t.Subject != rc.Subject:
		return fmt.Sprintf("it is for subject %s, the receipt's is %s", t.Subject, rc.Subject)
	case t.Approver == rc.Subject:
		// kernel.batchSigners: never the calling agent's own key.
		return fmt.Sprintf("its approver is the receipt's subject %s: an agent cannot approve its own calls", rc.Subject)
	case !matchPattern(t.ServerPattern, rc.ToolServer) || !matchPattern(t.ToolPattern, rc.ToolName):
		return fmt.Sprintf("its patterns %q/%q do not match %s/%s", t.ServerPattern, t.ToolPattern, rc.ToolServer, rc.ToolName)
	case ts >= t.NotAfter || ts+maxTokenSkew < t.NotBefore:
		return fmt.Sprintf("timestamp %d s is outside its window [%d, %d)", ts, t.NotBefore, t.NotAfter)
	}
	return ""
}

// matchPattern is approval.MatchPattern: a trailing "*" matches any
// suffix, otherwise the name must be equal.
func matchPattern(p, name string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return p == name
}
