package chio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// RespondResult is POST /approvals/{id}/respond's answer. Outcome is
// "approved", "denied", or "pending" while a quorum is still short.
type RespondResult = kernel.RespondResult

// DefaultTokenTTL is how long a signed approval token stays presentable.
// It is short: a token is meant to be presented now, by a channel.
const DefaultTokenTTL = 10 * time.Minute

// TokenOption adds to an approval token before it is signed.
type TokenOption func(*tokenOpts) error

type tokenOpts struct {
	note    string
	amended json.RawMessage
	answers Answers
	ttl     time.Duration
}

// WithNote signs a note for the agent and the receipt.
func WithNote(text string) TokenOption {
	return func(o *tokenOpts) error { o.note = text; return nil }
}

// WithAmendment approves an edited call: args (a JSON object) replace the
// call's arguments.
func WithAmendment(args any) TokenOption {
	return func(o *tokenOpts) error {
		raw, err := rawJSON(args)
		if err != nil || len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%w: amended arguments must be a JSON object", ErrBadRequest)
		}
		o.amended = raw
		return nil
	}
}

// WithAnswers answers a question request (an agent's Ask). A text or
// single-select answer is a one-element list.
func WithAnswers(a Answers) TokenOption {
	return func(o *tokenOpts) error { o.answers = a; return nil }
}

// WithTTL sets the token's lifetime (default DefaultTokenTTL, at least 1 s
// — a token's times are whole seconds — and at most 1 h).
func WithTTL(d time.Duration) TokenOption {
	return func(o *tokenOpts) error {
		if d < approval.MinApprovalTTL || d > approval.MaxApprovalTTL {
			return fmt.Errorf("%w: token ttl must be in [%s, %s]", ErrBadRequest, approval.MinApprovalTTL, approval.MaxApprovalTTL)
		}
		o.ttl = d
		return nil
	}
}

// SignApproval signs an approval of req with the approver's key and
// returns the token bytes to present ([Client.Respond] or
// [Client.ResumeWithApproval]). The kernel checks the token against its
// own copy of the request, so a tampered req only yields a refused token.
func SignApproval(req *approval.Request, key PrivateKey, opts ...TokenOption) ([]byte, error) {
	return sign(req, key, approval.DecisionApproved, opts)
}

// SignDenial signs a denial of req; reason is signed as the note, shown to
// the agent and kept in the receipt.
func SignDenial(req *approval.Request, key PrivateKey, reason string) ([]byte, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("%w: a denial needs a reason", ErrBadRequest)
	}
	return sign(req, key, approval.DecisionDenied, []TokenOption{WithNote(reason)})
}

func sign(req *approval.Request, key PrivateKey, decision string, opts []TokenOption) ([]byte, error) {
	if req == nil || req.ApprovalID == "" {
		return nil, fmt.Errorf("%w: no approval request to sign", ErrBadRequest)
	}
	o := tokenOpts{ttl: DefaultTokenTTL}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if len(o.note) > approval.MaxNoteLen {
		return nil, fmt.Errorf("%w: note longer than %d bytes", ErrBadRequest, approval.MaxNoteLen)
	}
	tok := approval.NewToken(req, key.Public(), decision, time.Now(), o.ttl)
	tok.Note, tok.AmendedArguments = o.note, o.amended
	if o.answers != nil {
		raw, err := answersJSON(req, o.answers)
		if err != nil {
			return nil, err
		}
		tok.Answers = raw
	}
	return tok.Sign(key)
}

// answersJSON shapes answers as the kernel wants them (a string for text
// and single, a list for multi) and checks them against the questions now,
// so an approver learns of a bad answer before the kernel refuses it.
func answersJSON(req *approval.Request, a Answers) (json.RawMessage, error) {
	var qs []approval.Question
	if req.Kind != approval.KindQuestion || json.Unmarshal(req.Questions, &qs) != nil {
		return nil, fmt.Errorf("%w: %s is not a question request", ErrBadRequest, req.ApprovalID)
	}
	out := make(map[string]any, len(a))
	for _, q := range qs {
		picks, ok := a[q.ID]
		if !ok {
			continue // ValidateAnswers names the missing question
		}
		if q.Type == approval.QuestionMulti {
			out[q.ID] = picks
		} else if len(picks) == 1 {
			out[q.ID] = picks[0]
		} else {
			return nil, fmt.Errorf("%w: question %q takes exactly one answer", ErrBadRequest, q.ID)
		}
	}
	for id := range a {
		if _, ok := out[id]; !ok {
			return nil, fmt.Errorf("%w: no question %q", ErrBadRequest, id)
		}
	}
	raw, err := encodeJSON(out)
	if err != nil {
		return nil, err
	}
	if err := approval.ValidateAnswers(qs, raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return raw, nil
}

// Approval reads one approval request. An agent may read the requests
// that park its own calls; anything else needs WithBearer.
func (c *Client) Approval(ctx context.Context, id string) (*approval.Request, error) {
	if err := checkApprovalID(id); err != nil {
		return nil, err
	}
	hdr, err := c.readAuth(id)
	if err != nil {
		return nil, err
	}
	var v struct {
		Request *approval.Request `json:"request"`
	}
	if _, err := c.send(ctx, http.MethodGet, "/approvals/"+url.PathEscape(id), nil, hdr, &v, http.StatusOK); err != nil {
		return nil, err
	}
	if v.Request == nil {
		return nil, fmt.Errorf("chio: approval %s: empty answer from chiod", id)
	}
	if v.Request.ApprovalID != id {
		// Another request (a proxy or cache that served another answer):
		// it names another call, to await or sign.
		return nil, fmt.Errorf("chio: approval %s: chiod answered with request %.140q", id, v.Request.ApprovalID)
	}
	return v.Request, nil
}

// Respond presents a signed approval token (the token is the credential;
// no bearer is sent). It is one attempt: after a transport error the token
// may or may not have been consumed; [Client.ResumeWithApproval] or
// [Client.Await] tells how the call ended. An error matching
// [ErrVoteRecorded] means the vote IS recorded but the approved call is not
// finished yet: do not vote again; Await tells how it ends. An error
// matching [ErrVoteUncertain] means the vote may or may not be recorded:
// present the same token again (a recorded vote is refused as a replay,
// [ErrConflict]); do not ask another approver on the belief it did nothing.
func (c *Client) Respond(ctx context.Context, approvalID string, token []byte) (*RespondResult, error) {
	if err := checkApprovalID(approvalID); err != nil {
		return nil, err
	}
	token = bytes.TrimSpace(token)
	if len(token) == 0 || token[0] != '{' || !json.Valid(token) {
		return nil, fmt.Errorf("%w: the token must be the signed JSON object", ErrBadRequest)
	}
	// Assembled around the signed bytes so that they reach chiod exactly
	// as signed, not re-encoded.
	body := make([]byte, 0, len(token)+12)
	body = append(append(append(body, `{"token":`...), token...), '}')
	var res RespondResult
	if _, err := c.send(ctx, http.MethodPost, "/approvals/"+url.PathEscape(approvalID)+"/respond", body, nil, &res, http.StatusOK); err != nil {
		return nil, err
	}
	return &res, nil
}

// Pending lists pending approval requests, oldest first: this agent's
// when the client has a key, every agent's otherwise. chiod serves the
// list to reader and admin tokens only, so it needs WithBearer.
func (c *Client) Pending(ctx context.Context) ([]*approval.Request, error) {
	if c.bearer == "" {
		return nil, fmt.Errorf("%w: listing pending approvals needs a reader token (WithBearer)", ErrUnauthorized)
	}
	q := url.Values{"limit": {strconv.Itoa(1000)}}
	if c.key != nil {
		q.Set("subject_id", c.key.Public().String())
	}
	var list struct {
		Approvals []*approval.Request `json:"approvals"`
	}
	hdr := http.Header{"Authorization": {"Bearer " + c.bearer}}
	if _, err := c.send(ctx, http.MethodGet, "/approvals/pending?"+q.Encode(), nil, hdr, &list, http.StatusOK); err != nil {
		return nil, err
	}
	return list.Approvals, nil
}
