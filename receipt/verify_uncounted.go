package receipt

import "slices"

// What a final receipt's "uncounted" may say. The kernel (chainReceipt)
// writes it beside "approvers" and "dissenters", which list every recorded
// vote, naming those of them the deciding policy did not count: a key a
// reload removed after it voted, or an approval of a question that gave
// other answers than the deciding vote. So:
//
//   - it is a list of keys, each among the receipt's approvers or
//     dissenters (a key no vote has is named with no token to check it);
//   - an allow counts at least one of its approvers (approved_now.go: the
//     approvals counted meet the quorum; the kernel's advisory vote is
//     never uncounted), else it ran on no counted approval;
//   - a human-approval deny is written in the commit of the denial that
//     decided it, under the policy that counted it: its approver is not
//     uncounted.
//
// An allow's deciding approver may be uncounted: a reload between the
// vote and the allow can remove that key while the others still meet the
// quorum. Who counted beyond this is the policy's (its hash is on the
// receipt), which the export does not carry.

// uncountedProblems returns what is wrong with final receipt rc's
// "uncounted", each as a problem message.
func uncountedProblems(rc *Receipt) []string {
	uncounted, present, err := metaKeys(rc, "uncounted")
	if !present {
		return nil
	}
	if err != nil {
		return []string{err.Error()}
	}
	approvers, _, errA := metaKeys(rc, "approvers")
	dissenters, _, errD := metaKeys(rc, "dissenters")
	if errA != nil || errD != nil {
		return nil // vouch reports the malformed list, which fails the export
	}
	var out []string
	for _, k := range uncounted {
		if !slices.Contains(approvers, k) && !slices.Contains(dissenters, k) {
			out = append(out, "receipt names "+k+" in uncounted, but not among its approvers or dissenters: no vote of the request is that key's")
		}
	}
	switch approver := metaStr(rc, "approver"); {
	case rc.Decision.Verdict == Allow && len(approvers) > 0 && !slices.ContainsFunc(approvers, func(k string) bool { return !slices.Contains(uncounted, k) }):
		out = append(out, "allow receipt counts none of its approvers: every one is in uncounted, so no counted approval ran the call")
	case rc.Decision.Verdict == Deny && rc.Decision.Guard == "human-approval" && slices.Contains(uncounted, approver):
		out = append(out, "receipt is denied by approver "+approver+" (human-approval), whom it names in uncounted: the deciding denial is counted in the commit that records it")
	}
	return out
}
