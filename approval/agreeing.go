package approval

// Agreeing answers: a question request is decided only by a quorum of
// counted approvals giving the same answers, not by N answers of which the
// last is returned. The kernel decides by this rule (kernel/votes.go), and
// every view of a request's progress counts by it, here, so none says
// "2 of 2" for a question still open.

import (
	"bytes"
	"slices"

	"github.com/chiokernel/chio/internal/canon"
)

// SameAnswers reports whether votes v and w carry signed tokens with the
// same answers (canonically); an unreadable one agrees with nothing.
func SameAnswers(v, w *Vote) bool {
	answers := func(v *Vote) ([]byte, bool) {
		var tok Token
		if canon.Unmarshal(v.Token, &tok) != nil {
			return nil, false
		}
		b, err := canon.Canonicalize(tok.Answers)
		return b, err == nil
	}
	a, ok := answers(v)
	b, ok2 := answers(w)
	return ok && ok2 && bytes.Equal(a, b)
}

// AgreeingWith counts the approvals on r by keys in counted that a quorum
// may rest on with deciding, the approving vote that would decide: on a
// question request only those giving the same answers as deciding's token
// (the kernel keeps a vote from differing from the counted ones when it
// is cast, but a reload that trusts an earlier voter again can bring a
// differing answer back into the count); on other kinds every counted
// approval.
func (r *Request) AgreeingWith(counted []string, deciding *Vote) int {
	if r.Kind != KindQuestion {
		approved, _ := r.CountsAmong(counted)
		return approved
	}
	n := 0
	for i := range r.Votes {
		v := &r.Votes[i]
		if v.Decision == DecisionApproved && slices.Contains(counted, v.Approver) && SameAnswers(v, deciding) {
			n++
		}
	}
	return n
}

// LeadingApprovals counts the approvals on r by keys in counted that are
// nearest its quorum: on a question request the largest set of them giving
// the same answers (AgreeingWith; when counted answers disagree, none
// decides with more than its own agreeing set), on other kinds every
// counted approval. What "N of M approvals" shows while r is open.
func (r *Request) LeadingApprovals(counted []string) int {
	if r.Kind != KindQuestion {
		approved, _ := r.CountsAmong(counted)
		return approved
	}
	most := 0
	for i := range r.Votes {
		v := &r.Votes[i]
		if v.Decision == DecisionApproved && slices.Contains(counted, v.Approver) {
			most = max(most, r.AgreeingWith(counted, v))
		}
	}
	return most
}

// AnsweredOtherwise reports whether v is an approval on a pending question
// r, by a key r trusts, whose answers differ from those of r's largest
// agreeing set (LeadingApprovals): it is not counted among them, and its
// line says so beside their "N of M". Of sets tied for the largest, none.
func (r *Request) AnsweredOtherwise(v *Vote) bool {
	if r.Kind != KindQuestion || r.Status != StatusPending || v.Decision != DecisionApproved || !r.Trusts(v.Approver) {
		return false
	}
	return r.AgreeingWith(r.TrustedApprovers, v) < r.LeadingApprovals(r.TrustedApprovers)
}

// AnsweredOtherwiseNote is how every view marks such an approval.
const AnsweredOtherwiseNote = "answered otherwise: not counted with the approvals that agree"

// NoLongerApproverNote is how every view marks the vote of an approver a
// pending request no longer trusts (a reload removed them since they
// voted): it stays on the request, but Progress does not count it. So is
// a vote a resolved request's decision does not count for that reason.
const NoLongerApproverNote = "not counted: no longer an approver of this request"

// UncountedNote says why vote v on r does not count toward r's progress
// as shown ("N of M": Progress), or "" when it counts: the words every
// view (Slack, `chio approval show`; the dashboard mirrors them) puts
// beside the vote. On a resolved request, the votes its decision does not
// count (Resolution.Uncounted, its receipt's "uncounted"): an approval of
// a question r trusts whose answers differ from the deciding vote's
// answered otherwise, any other one is no longer an approver's.
func (r *Request) UncountedNote(v *Vote) string {
	switch {
	case r.Status == StatusPending && !r.Trusts(v.Approver):
		return NoLongerApproverNote
	case r.AnsweredOtherwise(v):
		return AnsweredOtherwiseNote
	case !r.uncountedByDecision(v):
		return ""
	case r.Trusts(v.Approver) && r.answersDifferFromDeciding(v):
		return AnsweredOtherwiseNote
	}
	return NoLongerApproverNote
}

// answersDifferFromDeciding reports whether v is an approval of question
// r whose answers are not those of the approving vote r's resolution
// names (Resolution.TokenID).
func (r *Request) answersDifferFromDeciding(v *Vote) bool {
	if r.Kind != KindQuestion || v.Decision != DecisionApproved || r.Resolution == nil || r.Resolution.TokenID == "" {
		return false
	}
	for i := range r.Votes {
		if d := &r.Votes[i]; d.TokenID == r.Resolution.TokenID {
			return d.Decision == DecisionApproved && !SameAnswers(v, d)
		}
	}
	return false
}
