package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// registerApprovals adds the approval routes of SPEC §6 and the call-status
// route, whose authorization (bearer or the agent's own proof) lives here.
//
// Who may call what:
//   - reading approvals, batches and the stream: a reader or admin bearer
//     (GET /approvals/{id} also admits the parked call's own agent);
//   - respond and batch respond: the signed approval token, nothing else;
//   - creating a batch: the approver's signature (the kernel checks the
//     approver is in the policy); revoking one: the admin bearer;
//   - GET /v1/calls/{id}: a reader or admin bearer, or the agent's Chio-Proof.
func (s *Server) registerApprovals() {
	s.mux.HandleFunc("GET /approvals/pending", s.requireRole(roleReader, s.listPending))
	s.mux.HandleFunc("GET /approvals/stream", s.requireRole(roleReader, s.streamApprovals))
	s.mux.HandleFunc("GET /approvals/batch", s.requireRole(roleReader, s.listBatches))
	s.mux.HandleFunc("POST /approvals/batch", s.createBatch)
	s.mux.HandleFunc("DELETE /approvals/batch/{id}", s.requireRole(roleAdmin, s.revokeBatch))
	s.mux.HandleFunc("POST /approvals/batch/respond", s.batchRespond)
	s.mux.HandleFunc("GET /approvals/{id}", s.getApproval)
	s.mux.HandleFunc("POST /approvals/{id}/respond", s.respond)
	s.mux.HandleFunc("GET /v1/calls/{id}", s.getCall)
}

// CloseStreams ends every SSE stream and long-poll so a graceful shutdown
// is not held open by clients that would otherwise wait forever (wire it
// with http.Server.RegisterOnShutdown). Long-pollers get the current state.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// --- reading approvals ---

// PendingList is GET /approvals/pending's answer, oldest first.
type PendingList struct {
	Approvals []*approval.Request `json:"approvals"`
	Count     int                 `json:"count"`
}

func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := queryLimit(q.Get("limit"))
	if err != nil {
		writeErr(w, err)
		return
	}
	list, err := s.cfg.Kernel.ListPending(kernel.PendingFilter{SubjectID: q.Get("subject_id"),
		ToolServer: q.Get("tool_server"), ToolName: q.Get("tool_name"), Approver: q.Get("approver"), Limit: limit})
	if err != nil {
		writeErr(w, err)
		return
	}
	if list == nil {
		list = []*approval.Request{}
	}
	writeJSON(w, http.StatusOK, PendingList{Approvals: list, Count: len(list)})
}

func queryLimit(v string) (int, error) {
	if v == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, apiErr(http.StatusBadRequest, CodeBadRequest, "limit must be 1.."+strconv.Itoa(MaxListLimit))
	}
	return n, nil
}

// ApprovalView is GET /approvals/{id}'s answer.
type ApprovalView struct {
	Request    *approval.Request    `json:"request"`
	Status     string               `json:"status"`
	Resolution *approval.Resolution `json:"resolution,omitempty"`
	// Approvers names the request's trusted approvers as the policy in
	// force lists them (a key it no longer lists is left out).
	Approvers []ApproverName `json:"approvers,omitempty"`
}

// ApproverName is an approver key with its display name.
type ApproverName struct {
	PublicKey   string `json:"public_key"`
	DisplayName string `json:"display_name"`
}

// approverNames looks the request's trusted approvers up in its grant
// (policy_id) as the policy in force has it; escalation tiers name that
// grant's approvers, so every tier's approvers are found there.
func (s *Server) approverNames(req *approval.Request) []ApproverName {
	names := map[string]string{}
	for _, g := range s.cfg.Kernel.Policy().Grants {
		if g.Approval == nil || g.ID != req.PolicyID {
			continue
		}
		for _, a := range g.Approval.Approvers {
			names[a.PublicKey.String()] = a.DisplayName
		}
	}
	var out []ApproverName
	for _, k := range req.TrustedApprovers {
		if n, ok := names[k]; ok {
			out = append(out, ApproverName{PublicKey: k, DisplayName: n})
		}
	}
	return out
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	bearer := s.bearerRole(r) >= roleReader
	if !bearer && r.Header.Get(StatusProofHeader) == "" {
		writeErr(w, errNeedAuth)
		return
	}
	req, err := s.cfg.Kernel.Approval(id)
	if err != nil && (bearer || !errors.Is(err, kernel.ErrNotFound)) {
		writeErr(w, notFoundAs(err, "approval request", id))
		return
	}
	if !bearer {
		subject := ""
		if req != nil {
			subject = req.SubjectPublicKey
		}
		if err := s.agentProof(r, id, subject); err != nil {
			writeErr(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, ApprovalView{Request: req, Status: req.Status, Resolution: req.Resolution, Approvers: s.approverNames(req)})
}

var errNeedAuth = apiErr(http.StatusUnauthorized, CodeUnauthorized, "a bearer token or a Chio-Proof header is required")

// agentProof admits the holder of subject's key through its Chio-Proof
// over id. An unknown id (subject "") answers exactly like a bad proof, so
// the header cannot be used to probe which ids exist.
func (s *Server) agentProof(r *http.Request, id, subject string) error {
	pub, err := keys.ParsePublicKey(subject)
	if err == nil {
		err = VerifyStatusProof(r.Header.Get(StatusProofHeader), pub, id, s.cfg.Kernel.Clock().Now())
	}
	if err != nil {
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Chio-Proof does not verify for this id")
	}
	return nil
}

// --- responding ---

// RespondRequest is POST /approvals/{id}/respond's body. Token keeps the
// bytes exactly as received: they are what the approver signed.
type RespondRequest struct {
	Token   json.RawMessage `json:"token"`
	Outcome string          `json:"outcome,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Channel string          `json:"channel,omitempty"`
}

var channelName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// check validates the unsigned fields around the token and returns the
// normalized outcome. Nothing here authorizes anything: the kernel does.
func (rr *RespondRequest) check() (string, error) {
	if len(rr.Token) == 0 || string(rr.Token) == "null" {
		return "", apiErr(http.StatusUnauthorized, CodeUnauthorized, "a signed approval token is required")
	}
	var outcome string
	switch rr.Outcome {
	case "":
	case approval.DecisionApproved, "approve":
		outcome = approval.DecisionApproved
	case approval.DecisionDenied, "deny":
		outcome = approval.DecisionDenied
	default:
		return "", apiErr(http.StatusBadRequest, CodeBadRequest, "outcome must be approved or denied")
	}
	if len(rr.Reason) > approval.MaxNoteLen {
		return "", apiErr(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("reason longer than %d bytes", approval.MaxNoteLen))
	}
	if rr.Reason != "" {
		// Receipts record only what the approver signed; an unsigned reason
		// could put words in their mouth. It may repeat the signed note.
		var t struct {
			Note string `json:"note"`
		}
		if json.Unmarshal(rr.Token, &t) != nil || t.Note != rr.Reason {
			return "", apiErr(http.StatusBadRequest, CodeBadRequest, "reason must equal the token's signed note (sign the reason as the note)")
		}
	}
	switch {
	case rr.Channel == "":
	case len(rr.Channel) > MaxChannelLen || !channelName.MatchString(rr.Channel):
		return "", apiErr(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("channel must be 1..%d of [a-z0-9_-]", MaxChannelLen))
	case rr.Channel == kernel.ChannelTimeout || rr.Channel == kernel.ChannelBatch:
		return "", apiErr(http.StatusBadRequest, CodeBadRequest, "channel "+rr.Channel+" is reserved for the kernel")
	}
	return outcome, nil
}

func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	var rr RespondRequest
	if err := decode(w, r, MaxRespondBody, &rr); err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("id")
	res, err := s.respondOne(r.Context(), id, &rr)
	if err != nil {
		writeErr(w, notFoundAs(err, "approval request", id))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) respondOne(ctx context.Context, id string, rr *RespondRequest) (*kernel.RespondResult, error) {
	if id == "" || len(id) > MaxIDLen {
		return nil, notFoundAs(kernel.ErrNotFound, "approval request", id)
	}
	outcome, err := rr.check()
	if err != nil {
		return nil, err
	}
	// Once a vote is consumed the approved call must run to completion, even
	// if the approver's connection drops: never hand the kernel a context
	// that a vanished client can cancel mid-dispatch.
	return s.cfg.Kernel.Respond(context.WithoutCancel(ctx), id, rr.Token, outcome, rr.Channel)
}

// BatchRespondRequest is POST /approvals/batch/respond's body.
type BatchRespondRequest struct {
	Items   []BatchRespondItem `json:"items"`
	Channel string             `json:"channel,omitempty"`
}

// BatchRespondItem is one respond body plus the approval it answers.
type BatchRespondItem struct {
	ApprovalID string          `json:"approval_id"`
	Token      json.RawMessage `json:"token"`
	Outcome    string          `json:"outcome,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

// BatchRespondResult is one item's result; Error is an API error code.
type BatchRespondResult struct {
	ApprovalID string `json:"approval_id"`
	OK         bool   `json:"ok"`
	Outcome    string `json:"outcome,omitempty"`
	ReceiptID  string `json:"receipt_id,omitempty"`
	Error      string `json:"error,omitempty"`
	Message    string `json:"message,omitempty"`
}

// BatchRespondAnswer is POST /approvals/batch/respond's answer.
type BatchRespondAnswer struct {
	Results []BatchRespondResult `json:"results"`
	Summary struct {
		OK     int `json:"ok"`
		Failed int `json:"failed"`
	} `json:"summary"`
}

// batchRespond presents each token on its own: every item is its own
// atomic transition, so one bad token never blocks or undoes the others.
func (s *Server) batchRespond(w http.ResponseWriter, r *http.Request) {
	var br BatchRespondRequest
	if err := decode(w, r, MaxBatchRespondBody, &br); err != nil {
		writeErr(w, err)
		return
	}
	if len(br.Items) == 0 || len(br.Items) > approval.MaxBatchRespond {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("items must hold 1..%d responses", approval.MaxBatchRespond)))
		return
	}
	ans := BatchRespondAnswer{Results: make([]BatchRespondResult, 0, len(br.Items))}
	for _, it := range br.Items {
		res := BatchRespondResult{ApprovalID: it.ApprovalID}
		out, err := s.respondOne(r.Context(), it.ApprovalID,
			&RespondRequest{Token: it.Token, Outcome: it.Outcome, Reason: it.Reason, Channel: br.Channel})
		if err != nil {
			ae := classify(err)
			res.Error, res.Message = ae.Code, ae.Message
			ans.Summary.Failed++
		} else {
			res.OK, res.Outcome, res.ReceiptID = true, out.Outcome, out.ReceiptID
			ans.Summary.OK++
		}
		ans.Results = append(ans.Results, res)
	}
	writeJSON(w, http.StatusOK, ans)
}

// --- standing (batch) approvals ---

// BatchCreateRequest is POST /approvals/batch's body.
type BatchCreateRequest struct {
	Token json.RawMessage `json:"token"`
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	var bc BatchCreateRequest
	if err := decode(w, r, MaxBatchCreateBody, &bc); err != nil {
		writeErr(w, err)
		return
	}
	if len(bc.Token) == 0 || string(bc.Token) == "null" {
		writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "a signed batch approval token is required"))
		return
	}
	b, err := s.cfg.Kernel.CreateBatch(r.Context(), bc.Token)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": b.Token.ID, "token": json.RawMessage(b.Raw)})
}

// BatchList is GET /approvals/batch's answer.
type BatchList struct {
	Batches []kernel.BatchView `json:"batches"`
	Count   int                `json:"count"`
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Kernel.ListBatches()
	if err != nil {
		writeErr(w, err)
		return
	}
	out := BatchList{Batches: make([]kernel.BatchView, 0, len(list))}
	for _, b := range list {
		out.Batches = append(out.Batches, kernel.BatchView{Token: json.RawMessage(b.Raw), Usage: b.Usage, Revoked: b.Revoked})
	}
	out.Count = len(out.Batches)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) revokeBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxIDLen {
		writeErr(w, notFoundAs(kernel.ErrNotFound, "standing approval", id))
		return
	}
	if err := s.cfg.Kernel.RevokeBatch(r.Context(), id); err != nil {
		writeErr(w, notFoundAs(err, "standing approval", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}

// --- the event stream ---

// streamApprovals serves Server-Sent Events. It subscribes first and then
// replays the pending requests, so a (re)connecting client misses nothing;
// an event in between may arrive twice, and clients key on approval_id.
func (s *Server) streamApprovals(w http.ResponseWriter, r *http.Request) {
	events, cancel, ok := s.cfg.Kernel.Subscribe()
	if !ok {
		writeErr(w, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "too many event subscribers; retry later"))
		return
	}
	defer cancel()
	pending, err := s.cfg.Kernel.ListPending(kernel.PendingFilter{Limit: MaxStreamSnapshot})
	if err != nil {
		writeErr(w, err)
		return
	}
	rc := http.NewResponseController(w)
	// A deadline left on the connection would cut the next request on it.
	defer rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	var seq uint64
	// write sends one frame and flushes it; any error means the client is gone.
	write := func(frame string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
		if _, err := fmt.Fprint(w, frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(e kernel.Event) bool {
		data, err := json.Marshal(e) // one line: JSON escapes newlines in strings
		if err != nil {
			return false
		}
		seq++
		return write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", seq, e.Type, data))
	}
	if !write("retry: 2000\n\n") {
		return
	}
	for _, p := range pending {
		if !send(kernel.Event{Type: kernel.EventApprovalRequested, Approval: p}) {
			return
		}
	}
	keepalive := time.NewTicker(StreamKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case e, open := <-events:
			// A closed channel means the kernel dropped us for falling behind:
			// end the stream, the client reconnects and gets a fresh snapshot.
			if !open || !send(e) {
				return
			}
		case <-keepalive.C:
			if !write(": keepalive\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// --- call status ---

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
	wait, err := parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if wait > 0 && inFlight(rec.Status) {
		if rec, err = s.waitForCall(r.Context(), rec, wait); err != nil {
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
		d = time.Duration(n) * time.Second
	}
	if err != nil || d < 0 || d > MaxCallWait {
		return 0, apiErr(http.StatusBadRequest, CodeBadRequest, "wait must be a duration from 0 to "+MaxCallWait.String())
	}
	return d, nil
}

func inFlight(status string) bool {
	return status == kernel.StatusPendingApproval || status == kernel.StatusDispatching
}

// waitForCall long-polls until the call leaves pending_approval or
// dispatching, the wait passes, or the client goes. It subscribes BEFORE
// re-reading the record, so a transition between the two cannot be missed.
// The wait is transport time, not decision time: it uses the real clock.
func (s *Server) waitForCall(ctx context.Context, rec *kernel.CallRecord, wait time.Duration) (*kernel.CallRecord, error) {
	// One agent (one replayable proof) must not take every subscriber slot
	// from the dashboards and other agents.
	if !s.waiters.acquire(rec.Subject) {
		return nil, apiErr(http.StatusTooManyRequests, CodeUnavailable, "too many concurrent waits for this agent; retry later")
	}
	defer s.waiters.release(rec.Subject)
	events, cancel, ok := s.cfg.Kernel.Subscribe()
	if !ok {
		return nil, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "too many waiters; retry later")
	}
	defer cancel()
	id, approvalID := rec.RequestID, rec.ApprovalID
	cur, err := s.cfg.Kernel.Call(id)
	if err != nil || !inFlight(cur.Status) {
		return cur, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case e, open := <-events:
			if !open || concerns(e, id, approvalID) {
				return s.cfg.Kernel.Call(id)
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

// concerns reports whether e may have ended call id. Both events are
// published only after the state they announce is durable.
func concerns(e kernel.Event, id, approvalID string) bool {
	switch e.Type {
	case kernel.EventCallCompleted:
		return e.Call != nil && e.Call.RequestID == id
	case kernel.EventApprovalResolved:
		return e.Approval != nil && approvalID != "" && e.Approval.ApprovalID == approvalID
	}
	return false
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
	approved, _ := req.Counts()
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

// waiterLimit counts concurrent long-polls per agent key.
type waiterLimit struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *waiterLimit) acquire(subject string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	if w.n[subject] >= MaxWaitsPerAgent {
		return false
	}
	w.n[subject]++
	return true
}

func (w *waiterLimit) release(subject string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[subject]--; w.n[subject] <= 0 {
		delete(w.n, subject)
	}
}
