package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chiokernel/chio/approval"
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
	s.mux.HandleFunc("POST /approvals/batch", queryless(s.createBatch))
	s.mux.HandleFunc("DELETE /approvals/batch/{id}", queryless(s.requireRole(roleAdmin, s.revokeBatch)))
	s.mux.HandleFunc("DELETE /approvals/batch", s.requireRole(roleAdmin, s.revokeBatchByQuery))
	s.mux.HandleFunc("POST /approvals/batch/respond", queryless(s.batchRespond))
	s.mux.HandleFunc("GET /approvals/{id}", s.getApproval)
	s.mux.HandleFunc("POST /approvals/{id}/respond", queryless(s.respond))
	s.mux.HandleFunc("POST /approvals/{id}/cancel", queryless(s.cancelApproval)) // cancel.go
	s.mux.HandleFunc("GET /v1/calls/{id}", s.getCall)
}

// CloseStreams ends every SSE stream and long-poll so a graceful shutdown
// is not held open by clients that would otherwise wait forever (wire it
// with http.Server.RegisterOnShutdown). Long-pollers get the current state;
// exports and new event streams are refused from then on (503:
// exportRefused, streamApprovals).
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// shuttingDown reports whether CloseStreams was called: chiod is shutting
// down.
func (s *Server) shuttingDown() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// --- reading approvals ---

// PendingList is GET /approvals/pending's answer, oldest first.
type PendingList struct {
	Approvals []*approval.Request `json:"approvals"`
	Count     int                 `json:"count"`
}

func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	q, err := strictQuery(r, []string{"limit", "subject_id", "tool_server", "tool_name", "approver"})
	if err != nil {
		writeErr(w, err)
		return
	}
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
	if !noQuery(w, r) {
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
		req = agentView(req)
	}
	writeJSON(w, http.StatusOK, ApprovalView{Request: req, Status: req.Status, Resolution: req.Resolution, Approvers: s.approverNames(req)})
}

var errNeedAuth = apiErr(http.StatusUnauthorized, CodeUnauthorized, "a bearer token or a Chio-Proof header is required")

// agentProof admits the holder of subject's key through its Chio-Proof
// over id. An unknown id (subject "") answers exactly like a bad proof, so
// the header cannot be used to probe which ids exist.
func (s *Server) agentProof(r *http.Request, id, subject string) error {
	pub, known := proofKey(subject)
	err := VerifyStatusProof(r.Header.Get(StatusProofHeader), pub, id, s.cfg.Kernel.Clock().Now())
	if err != nil || !known {
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Chio-Proof does not verify for this id")
	}
	return nil
}

// standInKey stands for the owner of an unknown id: an agent's proof is
// checked against it, the same work as for another agent's id, so that
// the time of the answer does not tell the two apart either. Its seed is
// in this source: a proof by it is refused whatever it verifies (proofKey
// says the id is unknown).
var standInKey = keys.FromSeed(make([]byte, 32)).Public()

// proofKey is the key an agent's proof about an id is checked against:
// its owner's (subject), or standInKey and false when the id is unknown.
func proofKey(subject string) (keys.PublicKey, bool) {
	if pub, err := keys.ParsePublicKey(subject); err == nil {
		return pub, true
	}
	return standInKey, false
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

// endpointChannels are the channels whose votes reach chiod through their
// own endpoint, which records the channel itself: /slack/interactions
// (channels/slack's Name, after Slack's signature) and /email/a/LINK
// (channels/email's Name). This route never receives their votes, so a
// client naming one would make the receipt say the vote came that way.
// respond_channel_test.go checks the names against those packages.
var endpointChannels = map[string]bool{"slack": true, "email": true}

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
	case endpointChannels[rr.Channel]:
		return "", apiErr(http.StatusBadRequest, CodeBadRequest, "channel "+rr.Channel+" is recorded only for votes chiod receives on its own "+rr.Channel+" endpoint; name this client's channel otherwise")
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
	res, err := s.respondOne(r, id, &rr)
	if err != nil {
		writeErr(w, notFoundAs(err, "approval request", id))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) respondOne(r *http.Request, id string, rr *RespondRequest) (*kernel.RespondResult, error) {
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
	res, err := s.cfg.Kernel.Respond(context.WithoutCancel(r.Context()), id, rr.Token, outcome, rr.Channel)
	if err != nil && classify(err).Status < http.StatusInternalServerError && !s.mayKnowApprovals(r, rr.Token) {
		return nil, errNotYourRequest
	}
	return res, err
}

// errNotYourRequest is every refusal of a token no approver of the policy
// in force signed, presented by a caller who may not read approvals. The
// route needs no bearer, so such a token is anyone's: the kernel's own
// answer would tell them whether id names a request (404 on an unknown id,
// 403 or 409 on a real one) and, through which binding check failed, what
// the request holds. Whoever may read approvals anyway (mayKnowApprovals)
// still gets the kernel's answer, 404 for an id that does not exist
// included.
var errNotYourRequest = apiErr(http.StatusForbidden, CodeApprovalRejected,
	"the token does not decide this approval request: it is malformed, not signed by an approver of the policy in force, or the request does not exist")

// mayKnowApprovals reports whether r may learn which approval requests
// exist: it holds a reader or admin token or an approver session (GET
// /approvals/pending is theirs), or token is signed by an approver of the
// policy in force (who may sign in and read them).
func (s *Server) mayKnowApprovals(r *http.Request, token json.RawMessage) bool {
	return s.bearerRole(r) >= roleReader || s.signedByApprover(token)
}

// signedByApprover reports whether raw is a token whose signature verifies
// by the approver it names, a key the policy in force lists as an approver.
func (s *Server) signedByApprover(raw json.RawMessage) bool {
	return approval.SignedBy(raw, func(approver string) bool {
		_, ok := s.approverName(approver)
		return ok
	})
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
		out, err := s.respondOne(r, it.ApprovalID,
			&RespondRequest{Token: it.Token, Outcome: it.Outcome, Reason: it.Reason, Channel: br.Channel})
		if err != nil {
			ae := classify(err)
			logCause(ae)
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

// BatchList is GET /approvals/batch's answer: one page of standing
// approvals in id order. NextAfter, when set, is the after of the next
// page.
type BatchList struct {
	Batches   []kernel.BatchView `json:"batches"`
	Count     int                `json:"count"`
	NextAfter string             `json:"next_after,omitempty"`
}

// listBatches is GET /approvals/batch?limit=N&after=ID: every batch ever
// created is kept (receipts name them), so they are listed a page at a
// time, limit (1..MaxListLimit, default DefaultListLimit) after the id
// after.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	q, err := strictQuery(r, []string{"limit", "after"})
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, err := queryLimit(q.Get("limit"))
	if err != nil {
		writeErr(w, err)
		return
	}
	// after is a stored id (a page's next_after): bounded like one, and
	// text a PostgreSQL key can hold (valid UTF-8, no NUL).
	after := q.Get("after")
	if len(after) > approval.MaxTokenBytes || !utf8.ValidString(after) || strings.ContainsRune(after, 0) {
		writeErr(w, badRequest("after must be a standing approval id (the next_after of the previous page)"))
		return
	}
	list, more, err := s.cfg.Kernel.ListBatches(after, limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := BatchList{Batches: make([]kernel.BatchView, 0, len(list))}
	for _, b := range list {
		out.Batches = append(out.Batches, kernel.BatchView{Token: json.RawMessage(b.Raw), Usage: b.Usage, Revoked: b.Revoked})
	}
	out.Count = len(out.Batches)
	if more {
		out.NextAfter = list[len(list)-1].Token.ID
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) revokeBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxIDLen {
		writeErr(w, notFoundAs(kernel.ErrNotFound, "standing approval", id))
		return
	}
	s.revokeBatchID(w, r, id)
}

// revokeBatchByQuery is DELETE /approvals/batch?id=ID, for a standing
// approval whose id the path form cannot carry. New batches have ids
// approval.ValidID accepts, which always fit in the path; a batch stored
// before that rule may have an id that is longer than MaxIDLen, is "." or
// "..", or holds "/" or control characters, and must still be revocable.
// The id is bounded by the largest token a batch can be created from.
func (s *Server) revokeBatchByQuery(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	ids := q["id"]
	if err != nil || len(q) != 1 || len(ids) != 1 || ids[0] == "" {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "give exactly one standing approval id: DELETE /approvals/batch?id=ID"))
		return
	}
	if len(ids[0]) > approval.MaxTokenBytes {
		writeErr(w, notFoundAs(kernel.ErrNotFound, "standing approval", ids[0]))
		return
	}
	s.revokeBatchID(w, r, ids[0])
}

func (s *Server) revokeBatchID(w http.ResponseWriter, r *http.Request, id string) {
	if err := s.cfg.Kernel.RevokeBatch(r.Context(), id); err != nil {
		writeErr(w, notFoundAs(err, "standing approval", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}
