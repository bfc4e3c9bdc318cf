package httpapi

// GET /v1/calls/{id}: a call's state, and the long-poll (?wait=) that agents
// (chio await, the SDK's Await) use to learn how a parked call ended.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

// CallStatus is GET /v1/calls/{id}'s answer: the call's outcome, plus how
// its approval ended when it had one.
type CallStatus struct {
	kernel.Outcome
	Approval *CallApproval `json:"approval,omitempty"`
}

// CallApproval tells the agent what the human decided: the deciding
// approver, their signed note, and the arguments they amended, if any.
type CallApproval struct {
	Status              string          `json:"status"`
	Approvals           int             `json:"approvals"`
	Quorum              int             `json:"quorum"`
	Approver            string          `json:"approver,omitempty"`
	ApproverDisplayName string          `json:"approver_display_name,omitempty"`
	Note                string          `json:"note,omitempty"`
	Amended             bool            `json:"amended"`
	AmendedArguments    json.RawMessage `json:"amended_arguments,omitempty"`
}

func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	bearer := s.tokenRole(r) >= roleReader
	if !bearer && r.Header.Get(StatusProofHeader) == "" {
		writeErr(w, errNeedAuth)
		return
	}
	rec, err := s.cfg.Kernel.Call(id)
	if err != nil && (bearer || !errors.Is(err, kernel.ErrNotFound)) {
		writeErr(w, notFoundAs(err, "call", id))
		return
	}
	if !bearer {
		subject := ""
		if rec != nil {
			subject = rec.Subject
		}
		if err := s.agentProof(r, id, subject); err != nil {
			writeErr(w, err)
			return
		}
	}
	q, err := strictQuery(r, []string{"wait"})
	if err != nil {
		writeErr(w, err)
		return
	}
	wait, err := parseWait(q.Get("wait"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if wait > 0 && kernel.InFlight(rec.Status) {
		if rec, err = s.waitForCall(r.Context(), s.waitShareOf(r, bearer, rec), rec, wait); err != nil {
			writeErr(w, err)
			return
		}
	}
	st, err := s.callStatus(rec)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// parseWait accepts a Go duration ("30s") or whole seconds ("30").
func parseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil && decimal(v) {
		var n int
		n, err = strconv.Atoi(v)
		// Past the bound, refused before the multiplication, which would
		// wrap around into a short wait.
		if n > int(MaxCallWait/time.Second) {
			n = -1
		}
		d = time.Duration(n) * time.Second
	}
	if err != nil || d < 0 || d > MaxCallWait {
		return 0, apiErr(http.StatusBadRequest, CodeBadRequest, "wait must be a duration from 0 to "+MaxCallWait.String())
	}
	return d, nil
}

// waitShare is the credential a long-poll counts against, and its share.
type waitShare struct {
	cred  string
	share int
	who   string // for the refusal: "this agent", "this token"
}

// waitShareOf names what a long-poll counts against: the bearer token that
// asks, whichever agent's call it is, or else the agent whose proof asks.
// A token's waits are never the agent's, so a leaked reader token cannot
// take the slots an agent needs to await its own calls.
func (s *Server) waitShareOf(r *http.Request, bearer bool, rec *kernel.CallRecord) waitShare {
	if !bearer {
		return waitShare{cred: "agent:" + rec.Subject, share: MaxWaitsPerAgent, who: "this agent"}
	}
	return waitShare{cred: s.credentialOf(r), share: MaxWaitsPerToken, who: "this token"}
}

// waitForCall long-polls until the call leaves pending_approval or
// dispatching, the wait passes, or the client goes. It subscribes BEFORE
// re-reading the record, so a transition between the two cannot be missed.
// The wait is transport time, not decision time: it uses the real clock.
func (s *Server) waitForCall(ctx context.Context, ws waitShare, rec *kernel.CallRecord, wait time.Duration) (*kernel.CallRecord, error) {
	// One credential (an agent's replayable proof, a leaked token) must
	// not take every waiter slot from the others. Streams draw from
	// another pool entirely, so no number of dashboards or SSE clients can
	// starve a wait.
	if !s.waiters.acquire(ws.cred, ws.share) {
		return nil, retryLater(http.StatusTooManyRequests,
			fmt.Sprintf("%s already holds %d concurrent waits, the most it may; retry later", ws.who, ws.share), WaitRetryAfter)
	}
	defer s.waiters.release(ws.cred)
	events, cancel, ok := s.cfg.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		return nil, retryLater(http.StatusServiceUnavailable, "too many waiters; retry later", WaitRetryAfter)
	}
	defer cancel()
	id, approvalID := rec.RequestID, rec.ApprovalID
	cur, err := s.cfg.Kernel.Call(id)
	if err != nil || !kernel.InFlight(cur.Status) {
		return cur, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case e, open := <-events:
			if !open {
				return s.cfg.Kernel.Call(id)
			}
			// An approval resolves before its call is delivered and settled:
			// keep waiting while the call is still in flight.
			if e.MayEnd(id, approvalID) {
				if cur, err := s.cfg.Kernel.Call(id); err != nil || !kernel.InFlight(cur.Status) {
					return cur, err
				}
			}
		case <-timer.C:
			return s.cfg.Kernel.Call(id)
		case <-s.closing:
			return s.cfg.Kernel.Call(id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// callStatus renders a record, adding its approval's progress or result.
func (s *Server) callStatus(rec *kernel.CallRecord) (*CallStatus, error) {
	st := &CallStatus{Outcome: *kernel.OutcomeOf(rec)}
	if rec.ApprovalID == "" {
		return st, nil
	}
	req, err := s.cfg.Kernel.Approval(rec.ApprovalID)
	if err != nil {
		// The record names a request the store cannot produce: say the
		// kernel is unwell rather than 404 for a call that exists.
		return nil, fmt.Errorf("%w: approval %s of call %s: %v", kernel.ErrUnavailable, rec.ApprovalID, rec.RequestID, err)
	}
	approved, _ := req.Progress()
	ca := &CallApproval{Status: req.Status, Approvals: approved, Quorum: req.Quorum}
	if rec.Status == kernel.StatusPendingApproval {
		st.Deadline, st.Summary = req.ExpiresAt, req.Summary
	}
	if v := decidingVote(req); v != nil {
		ca.Approver, ca.ApproverDisplayName, ca.Note = v.Approver, v.DisplayName, v.Note
		if len(v.Token) > 0 {
			var tok approval.Token
			if err := canon.Unmarshal(v.Token, &tok); err != nil {
				return nil, fmt.Errorf("%w: stored token of %s: %v", kernel.ErrUnavailable, req.ApprovalID, err)
			}
			if len(tok.AmendedArguments) > 0 {
				ca.Amended, ca.AmendedArguments = true, tok.AmendedArguments
			}
		}
	}
	st.Approval = ca
	return st, nil
}

// decidingVote is the vote whose token resolved the request, if any.
func decidingVote(req *approval.Request) *approval.Vote {
	if req.Resolution == nil || req.Resolution.TokenID == "" {
		return nil
	}
	for i := range req.Votes {
		if req.Votes[i].TokenID == req.Resolution.TokenID {
			return &req.Votes[i]
		}
	}
	return nil
}
