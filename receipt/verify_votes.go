package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// Which votes the signed receipts account for. The approval evidence of an
// export is not signed by the kernel: its trusted_approvers and its list of
// votes are whatever the file says. What the kernel signed is the final
// receipt of each request: its deciding token (approval_token_id) and,
// when more than one person voted, metadata "approvers" (every key that
// voted as the deciding vote did) and "dissenters" (every key that voted
// the other way). So the verifier requires:
//
//   - for each key the final receipt names, a valid token by that key in
//     the evidence, deciding as the receipt says (a vote dropped from the
//     export fails);
//   - for each token in the evidence, a final receipt naming its key (a
//     vote added to the export, by any key, fails), and one token per key.
//
// Receipts signed before "dissenters" existed name only the deciding side:
// a token by a key they do not name may be an honest dissenting vote, so
// it is counted in VerifyReport.Unvouched and reported as not checked,
// neither failed nor passed. A receipt with no "approvers" at all was
// decided by its only vote (every chio version lists them whenever more
// than one person voted), so nothing there is left unchecked.

// signedVote is what a final receipt signs about one key's vote.
type signedVote struct {
	list    string // "approval_token_id", "approvers" or "dissenters"
	dissent bool   // voted against the deciding token's decision
}

// vouch records on ev what final receipt f (decided by token deciding)
// signs about the request's votes; evidence() checks the tokens against it.
func (v *verifier) vouch(f final, ev *evidenceItem, deciding tokenView) {
	approvers, hasApprovers, errA := metaKeys(f.rc, "approvers")
	dissenters, hasDissenters, errD := metaKeys(f.rc, "dissenters")
	if err := errors.Join(errA, errD); err != nil {
		v.problem(f.line, f.rc, "%v", err)
		return // unchecked votes would otherwise pass: the problem fails the export
	}
	ev.final, ev.decision, ev.complete = f, deciding.Decision, !hasApprovers || hasDissenters
	if hasApprovers && !slices.Contains(approvers, deciding.Approver) {
		// approvers is every key that voted as the deciding vote did.
		v.problem(f.line, f.rc, "receipt names %s as its deciding approver, but not among its approvers, which list every vote deciding as it did", deciding.Approver)
	}
	ev.answers, ev.uncounted = deciding.Answers, map[string]bool{}
	uncounted, _, _ := metaKeys(f.rc, "uncounted") // malformed: a problem of its own (verify_uncounted.go)
	for _, k := range uncounted {
		ev.uncounted[k] = true
	}
	ev.signed = map[string]signedVote{deciding.Approver: {list: "approval_token_id"}}
	ev.signedOrder = []string{deciding.Approver}
	add := func(key, list string, dissent bool) {
		if prev, dup := ev.signed[key]; dup {
			if prev.dissent != dissent || prev.list == list {
				v.problem(f.line, f.rc, "receipt names %s twice (in %s and %s)", key, prev.list, list)
			}
			return
		}
		ev.signed[key] = signedVote{list: list, dissent: dissent}
		ev.signedOrder = append(ev.signedOrder, key)
	}
	for _, k := range approvers {
		add(k, "approvers", false)
	}
	for _, k := range dissenters {
		add(k, "dissenters", true)
	}
}

// accounted checks valid token t of ev against what the final receipt
// signs, and reports whether a signed receipt vouches for it. seen maps
// each approver already met in ev to its token id.
func (v *verifier) accounted(ev *evidenceItem, t tokenView, seen map[string]string) bool {
	if prev, dup := seen[t.Approver]; dup {
		v.problem(ev.line, nil, "approval %s: approver %s has two tokens (%s, %s); the kernel counts one vote per approver", ev.id, t.Approver, prev, t.ID)
		return false
	}
	seen[t.Approver] = t.ID
	if ev.final.rc == nil {
		if !ev.used {
			v.problem(ev.line, nil, "approval %s: token %s by %s is accounted for by no signed receipt: no final receipt of this request names a deciding approval_token_id", ev.id, t.ID, t.Approver)
		}
		return false // else the final receipt's own problem already fails the export
	}
	s, ok := ev.signed[t.Approver]
	switch {
	case !ok && ev.complete:
		v.problem(ev.line, nil, "approval %s: token %s by %s is accounted for by no signed receipt: final receipt %s (seq %d) names that key neither as the deciding approver nor among its approvers or dissenters",
			ev.id, t.ID, t.Approver, ev.final.rc.ID, ev.final.rc.Seq)
		return false
	case !ok:
		v.rep.Unvouched++
		return false
	case s.dissent && t.Decision == ev.decision:
		v.problem(ev.line, nil, "approval %s: final receipt %s lists %s among its dissenters, but token %s says %q, as the deciding token does", ev.id, ev.final.rc.ID, t.Approver, t.ID, t.Decision)
	case !s.dissent && t.Decision != ev.decision:
		v.problem(ev.line, nil, "approval %s: final receipt %s lists %s in %s, deciding %q, but token %s says %q", ev.id, ev.final.rc.ID, t.Approver, s.list, ev.decision, t.ID, t.Decision)
	case !s.dissent && len(t.AmendedArguments) > 0 && t.ID != ev.final.tokenID:
		// An amending approval resolves the request or is refused (kernel
		// recordVote: amendments only on quorum 1): it is the deciding
		// token (amendment() holds the receipt to it), or a dissent
		// recorded as denials ended the request.
		v.problem(ev.line, nil, "approval %s: token %s carries amended_arguments but is not the deciding token %s: final receipt %s lists %s in %s, as if it approved the arguments that ran",
			ev.id, t.ID, ev.final.tokenID, ev.final.rc.ID, t.Approver, s.list)
	case !s.dissent && !ev.uncounted[t.Approver] && !bytes.Equal(t.Answers, ev.answers):
		v.problem(ev.line, nil, "approval %s: final receipt %s lists %s in %s, counted, but its token %s answers %s, not the deciding token %s's %s: %s",
			ev.id, ev.final.rc.ID, t.Approver, s.list, t.ID, answersText(t.Answers), ev.final.tokenID, answersText(ev.answers), answersRule)
	}
	return true
}

// signedMissing fails each key the final receipt names that has no valid
// token in ev: a vote dropped from the export.
func (v *verifier) signedMissing(ev *evidenceItem, seen map[string]string) {
	if ev.final.rc == nil {
		return
	}
	for _, k := range ev.signedOrder {
		if _, ok := seen[k]; !ok {
			v.problem(ev.final.line, ev.final.rc, "receipt names %s in %s, but the approval evidence for %s (line %d) holds no valid token by that key: a counted vote is missing from the export",
				k, ev.signed[k].list, ev.id, ev.line)
		}
	}
}

// metaKeys reads a signed list of approver keys from r's metadata.
func metaKeys(r *Receipt, name string) (keys []string, present bool, err error) {
	raw, ok := r.Metadata[name]
	if !ok {
		return nil, false, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, true, fmt.Errorf("metadata %s is not a list of approver keys", name)
	}
	for _, x := range list {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, true, fmt.Errorf("metadata %s holds %v, not an approver key", name, x)
		}
		keys = append(keys, s)
	}
	return keys, true, nil
}
