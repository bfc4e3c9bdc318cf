package receipt

// The links between receipts (VerifyExport, verify_log.go). The kernel
// writes previous_receipt_id on two kinds of receipt, and nowhere else:
//
//   - the final receipt of an approval chain (allow, deny or cancelled,
//     with approval_request_id; kernel.chainReceipt) names the incomplete
//     receipt that suspended the call (with approval_request_id);
//   - a delivery outcome (incomplete, without approval_request_id;
//     kernel.settlementOf) names the allow receipt of a call whose tool
//     failed, was never reached, or may or may not have acted
//     (verify_delivery.go).
//
// So every incomplete receipt is one or the other: one with both fields,
// or neither, is not the kernel's.

type chainLink struct {
	line                          int
	id                            string
	seq                           uint64
	requestID, approvalID, params string
	subject                       string
	rc                            *Receipt // the incomplete receipt itself
	final                         string   // id of the final receipt, once seen
	finalAt                       int64    // its timestamp (unix ms)
}

// final is a receipt that decides an approval or uses a batch.
type final struct {
	line     int
	rc       *Receipt
	link     *chainLink
	tokenID  string
	batchID  string
	approver string
	auto     bool
	checked  bool // against its evidence (verify_approvals.go)
}

func metaStr(r *Receipt, k string) string {
	if v, ok := r.Metadata[k]; ok {
		return MetaString(v)
	}
	return ""
}

// chain records suspensions, links finals to them, and delivery outcomes
// to their allow receipts. call is rc's callKey (see verify_delivery.go).
func (v *verifier) chain(line int, rc *Receipt, call callKey) {
	arid := metaStr(rc, "approval_request_id")
	prev := metaStr(rc, "previous_receipt_id")
	if rc.Decision.Verdict == Incomplete {
		switch {
		case arid == "" && prev != "":
			v.deliveryOutcome(line, rc, prev, call)
			return
		case arid == "":
			v.problem(line, rc, "incomplete receipt with neither approval_request_id (awaiting approval) nor previous_receipt_id (a delivery outcome): the kernel writes no such receipt")
			return
		case prev != "":
			// Still recorded as the suspension it claims to be, so that its
			// final receipt is checked against it.
			v.problem(line, rc, "incomplete receipt with both approval_request_id and previous_receipt_id %s: the kernel writes a suspension or a delivery outcome, never both", prev)
		}
		l := &chainLink{line: line, id: rc.ID, seq: rc.Seq, requestID: rc.RequestID, approvalID: arid,
			params: rc.ParameterHash, subject: rc.Subject, rc: rc}
		v.incomplete[rc.ID] = l
		if prev, dup := v.byApproval[arid]; dup {
			v.problem(line, rc, "approval_request_id %s already has an incomplete receipt %s", arid, prev.id)
		} else {
			v.byApproval[arid] = l
		}
		return
	}
	f := final{line: line, rc: rc, tokenID: metaStr(rc, "approval_token_id"), batchID: metaStr(rc, "batch_approval_id"),
		approver: metaStr(rc, "approver"), auto: metaStr(rc, "auto_approved") == "true"}
	if f.tokenID != "" && f.approver == "" {
		// The kernel writes both (chainReceipt): without the signed
		// approver, the key of the deciding token would be the unsigned
		// evidence's word.
		v.problem(line, rc, "names approval_token_id %s but no approver: the kernel signs who decided with the token that did", f.tokenID)
	}
	for _, why := range uncountedProblems(rc) { // verify_uncounted.go
		v.problem(line, rc, "%s", why)
	}
	// A standing approval allows a call as it arrives (kernel tryBatch),
	// never one parked: its receipt is checked against the batch alone,
	// so one that also ends an approval chain would leave that chain's
	// deciding token checked by nothing.
	for _, k := range []string{"approval_request_id", "previous_receipt_id", "approval_token_id"} {
		if s := metaStr(rc, k); f.batchID != "" && s != "" {
			v.problem(line, rc, "receipt names batch_approval_id %s and %s %s: the kernel allows a call under a standing approval when it arrives, never one it parked", f.batchID, k, s)
			break
		}
	}
	switch {
	case prev == "" && arid != "":
		v.problem(line, rc, "approval_request_id %s but no previous_receipt_id: the chain is broken", arid)
	case prev != "":
		l := v.incomplete[prev]
		switch {
		case l == nil:
			v.problem(line, rc, "broken approval chain: previous_receipt_id %s is not an earlier incomplete receipt in the log", prev)
		case l.requestID != rc.RequestID:
			v.problem(line, rc, "broken approval chain: request_id %s differs from %s on incomplete receipt %s", rc.RequestID, l.requestID, l.id)
		case l.approvalID != arid:
			v.problem(line, rc, "broken approval chain: approval_request_id %q differs from %s on incomplete receipt %s", arid, l.approvalID, l.id)
		case l.final != "":
			v.problem(line, rc, "incomplete receipt %s already has a final receipt %s", l.id, l.final)
		default:
			l.final, l.finalAt = rc.ID, rc.Timestamp
			f.link = l
			v.rep.Chains++
			if decidedByVote(rc) && f.tokenID == "" {
				v.problem(line, rc, "%s ends approval chain %s but names no deciding token (approval_token_id): the kernel names the vote that decided it", decisionName(rc), arid)
			}
			v.sameCall(line, rc, l)
			if why := autoTime(f.auto, rc, l); why != "" {
				v.problem(line, rc, "%s", why)
			}
		}
	}
	if f.tokenID != "" || f.batchID != "" {
		fp := &f
		v.finals = append(v.finals, fp)
		if f.batchID != "" {
			u := v.batchUses[f.batchID]
			if u == nil {
				u = &batchUse{}
				v.batchUses[f.batchID] = u
			}
			u.finals = append(u.finals, fp)
		} else {
			v.approvalFinals[arid] = append(v.approvalFinals[arid], fp)
		}
		if f.auto {
			v.autoFinal[rc.ID] = true
		}
	}
}

// decidedByVote says whether final receipt rc of an approval chain can
// only have been decided by a vote the kernel names (chainReceipt): an
// allow (a person's approval or the advisory vote at the deadline) and a
// human-approval deny (the latest counted denial). Other ends (timeout,
// cancel, approval-policy with no approver left, recovery) may name none.
func decidedByVote(rc *Receipt) bool {
	return rc.Decision.Verdict == Allow || rc.Decision.Verdict == Deny && rc.Decision.Guard == "human-approval"
}

func decisionName(rc *Receipt) string {
	if rc.Decision.Guard != "" {
		return rc.Decision.Verdict + " by guard " + rc.Decision.Guard
	}
	return rc.Decision.Verdict
}
