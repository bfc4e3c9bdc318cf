package chio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Question is one field of an Ask: free text, a single or a multiple
// choice among Options, with AllowOther admitting a typed-in choice.
type Question = approval.Question

// Question types.
const (
	QuestionText   = approval.QuestionText
	QuestionSingle = approval.QuestionSingle
	QuestionMulti  = approval.QuestionMulti
)

// Answers maps a question id to its answer; a text or single-select
// answer is a one-element list.
type Answers map[string][]string

// HITLOption adjusts a Confirm or Ask.
type HITLOption func(*hitlOpts)

type hitlOpts struct {
	server    string
	requestID string
}

// DefaultHITLServer is the tool server whose confirm/ask verbs are used
// unless OnServer says otherwise (every builtin server offers them).
const DefaultHITLServer = "demo"

// OnServer sends the confirm or ask to the named server's verbs, and so
// under the grants for that server.
func OnServer(id string) HITLOption { return func(o *hitlOpts) { o.server = id } }

// WithRequestID names the checkpoint. A run that restarts and asks again
// with the same id and the same question gets the first answer (or keeps
// waiting for it) instead of asking the human twice: it is how a pause
// outlives the agent process.
func WithRequestID(id string) HITLOption { return func(o *hitlOpts) { o.requestID = id } }

// Confirm asks a human a yes/no question and waits for the answer:
// approved is true; denied by the human is false with a nil error. The
// approval's deadline passing is an error wrapping [ErrTimedOut], as is
// ctx's deadline; a denial by a policy guard wraps [ErrDenied]; a
// withdrawn (cancelled) request wraps [ErrCancelled].
func (c *Client) Confirm(ctx context.Context, prompt string, details any, opts ...HITLOption) (bool, error) {
	d, err := rawJSON(details)
	if err != nil {
		return false, fmt.Errorf("%w: details: %v", ErrBadRequest, err)
	}
	res, err := c.hitl(ctx, policy.ToolConfirm, approval.ConfirmArgs{Prompt: prompt, Details: d}, opts)
	if err != nil {
		return false, err
	}
	if res.Status == StatusDenied && res.Guard == kernel.GuardHumanApproval {
		return false, nil
	}
	if err := hitlDenial(res); err != nil {
		return false, err
	}
	var out struct {
		Confirmed bool `json:"confirmed"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || !out.Confirmed {
		return false, fmt.Errorf("chio: confirm %s: unexpected output %s", res.RequestID, res.Output)
	}
	return true, nil
}

// Ask puts a small form to a human and waits for the signed answers.
// Declined by the human is an error wrapping [ErrDeclined]; the deadline
// (the approval's or ctx's) wraps [ErrTimedOut]; a denial by a policy
// guard wraps [ErrDenied]; a withdrawn (cancelled) request wraps
// [ErrCancelled].
func (c *Client) Ask(ctx context.Context, prompt string, questions []Question, opts ...HITLOption) (Answers, error) {
	res, err := c.hitl(ctx, policy.ToolAsk, approval.AskArgs{Prompt: prompt, Questions: questions}, opts)
	if err != nil {
		return nil, err
	}
	if res.Status == StatusDenied && res.Guard == kernel.GuardHumanApproval {
		return nil, fmt.Errorf("chio: ask %s: %w: %s", res.RequestID, ErrDeclined, res.Reason)
	}
	if err := hitlDenial(res); err != nil {
		return nil, err
	}
	var out struct {
		Answers map[string]json.RawMessage `json:"answers"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Answers == nil {
		return nil, fmt.Errorf("chio: ask %s: unexpected output %s", res.RequestID, res.Output)
	}
	ans := make(Answers, len(out.Answers))
	for id, v := range out.Answers {
		var one string
		var many []string
		switch {
		case json.Unmarshal(v, &one) == nil:
			ans[id] = []string{one}
		case json.Unmarshal(v, &many) == nil:
			ans[id] = many
		default:
			return nil, fmt.Errorf("chio: ask %s: answer to %q is %s", res.RequestID, id, v)
		}
	}
	return ans, nil
}

// hitl calls a verb and waits for it to end.
func (c *Client) hitl(ctx context.Context, tool string, args any, opts []HITLOption) (*Resolution, error) {
	o := hitlOpts{server: DefaultHITLServer}
	for _, opt := range opts {
		opt(&o)
	}
	r, err := c.CallTool(ctx, Call{Server: o.server, Tool: tool, Arguments: args, RequestID: o.requestID})
	if err != nil {
		// Only the caller's own deadline is "timed out". A request the SDK
		// gave up on (its per-request limit) is a lost answer: the error
		// stays ErrOutcomeUnknown, to retry under the same id or await.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %w", ErrTimedOut, err)
		}
		return nil, err
	}
	switch r := r.(type) {
	case *Allowed:
		// Only a replay of an answered checkpoint: the verbs always ask.
		return c.Await(ctx, r.RequestID)
	case *Denied:
		return &Resolution{Status: r.Status, RequestID: r.RequestID, ReceiptID: r.ReceiptID, Reason: r.Reason, Guard: r.Guard}, nil
	case *PendingApproval:
		return c.Await(ctx, r.RequestID)
	}
	return nil, fmt.Errorf("chio: %s: unexpected result %T", tool, r)
}

// hitlDenial turns a non-human ending of a confirm/ask into an error.
func hitlDenial(res *Resolution) error {
	switch {
	case res.Status == StatusAllowed && res.ToolError == "":
		return nil
	case res.Status == StatusAllowed:
		return fmt.Errorf("chio: %s: %s", res.RequestID, res.ToolError)
	case res.Status == StatusCancelled:
		// Withdrawn before a human decided: neither a human's nor a
		// policy's no.
		return fmt.Errorf("chio: %s: %w: %s", res.RequestID, ErrCancelled, res.Reason)
	case res.Guard == kernel.GuardApprovalTimeout:
		return fmt.Errorf("chio: %s: %w: %s", res.RequestID, ErrTimedOut, res.Reason)
	}
	return fmt.Errorf("chio: %s: %w: %s by %s: %s", res.RequestID, ErrDenied, res.Status, res.Guard, res.Reason)
}
