package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// Dispatch sends exactly one tools/call for req and reports what is known
// about it (see classify). The output of a call that ran is the upstream's
// CallToolResult exactly as it sent it; isError makes it a ToolError.
func (u *Upstream) Dispatch(ctx context.Context, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	c := u.cur.Load()
	if c == nil {
		// Not started, crashed, or reconnecting: nothing was sent.
		return kernel.DispatchResult{}, &kernel.DeliveryError{NotDelivered: true, Retryable: true,
			Err: fmt.Errorf("mcp server %q is not connected (%s)", u.id, u.downReason())}
	}
	s, err := c.tap.expect(req.RequestID)
	if err != nil {
		return kernel.DispatchResult{}, &kernel.DeliveryError{NotDelivered: true, Retryable: true, Err: err}
	}
	defer c.tap.release(s)
	meta := mcpsdk.Meta{MetaIdempotencyKey: req.RequestID}
	if req.Attempt > 0 {
		meta[MetaAttempt] = req.Attempt
	}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	cctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	res, err := c.cs.CallTool(cctx, &mcpsdk.CallToolParams{Meta: meta, Name: req.Tool, Arguments: args})
	seen := c.tap.view(s)
	if err != nil {
		return u.classify(ctx, cctx, c, seen, err)
	}
	return u.result(res, seen)
}

// result turns a CallToolResult into the kernel's terms.
func (u *Upstream) result(res *mcpsdk.CallToolResult, seen slot) (kernel.DispatchResult, error) {
	raw := seen.raw
	if raw == nil {
		// The tap did not see the answer (it came on a resumed stream):
		// record the decoded result re-encoded, the best that is left.
		u.log.Warn("raw tools/call result not captured; recording the decoded result")
		var err error
		if raw, err = json.Marshal(res); err != nil {
			return kernel.DispatchResult{}, fmt.Errorf("encode result: %w", err)
		}
	}
	if len(raw) > MaxResultBytes {
		return kernel.DispatchResult{Output: json.RawMessage("null"),
			ToolError: fmt.Sprintf("the tool's result is %d bytes; the limit is %d", len(raw), MaxResultBytes)}, nil
	}
	out := kernel.DispatchResult{Output: raw}
	switch {
	case res.NeedsInput():
		out.ToolError = "the tool asked for more input (elicitation); chio never answers on a human's behalf"
	case res.IsError:
		out.ToolError = "tool error: " + clip(resultText(res), maxToolErrorText)
	}
	return out, nil
}

// resultText joins a result's text content (for tool_error).
func resultText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, "\n")
}

// classify turns a failed tools/call into the kernel's delivery terms:
//
//   - the request never left chio (a dead pipe, a refused connection, a
//     session the server no longer knows, 429/503 before running it):
//     NotDelivered, and Retryable;
//   - it left but no answer came (the connection dropped, the process died,
//     the time ran out): Retryable with delivery unknown;
//   - the server answered with a JSON-RPC error (unknown tool, invalid
//     params): the server refused the call; a ToolError, not an error;
//   - the answer was too large: a ToolError (asking again gets the same).
func (u *Upstream) classify(ctx, cctx context.Context, c *conn, seen slot, err error) (kernel.DispatchResult, error) {
	if seen.oversize {
		return kernel.DispatchResult{Output: json.RawMessage("null"),
			ToolError: fmt.Sprintf("the upstream sent a message larger than %d bytes", MaxMessageBytes)}, nil
	}
	// Only an error the server sent is its answer; the SDK also reports
	// its own transport failures as JSON-RPC errors (-32005 "rejected by
	// transport"), which the tap never saw arrive.
	var werr *jsonrpc.Error
	if seen.answered && errors.As(err, &werr) {
		return kernel.DispatchResult{Output: json.RawMessage("null"),
			ToolError: clip(fmt.Sprintf("mcp error %d: %s", werr.Code, werr.Message), maxToolErrorText)}, nil
	}
	de := &kernel.DeliveryError{Err: fmt.Errorf("mcp server %q: %w", u.id, err), Retryable: true}
	switch {
	case errors.Is(err, mcpsdk.ErrSessionMissing):
		// The server forgot the session (it restarted): reconnect; it
		// refused the request without running it.
		u.drop(c)
		de.NotDelivered = true
	case !seen.sent:
		de.NotDelivered = true
		if ctx.Err() == nil && cctx.Err() == nil {
			u.drop(c) // the transport failed under us
		}
	case seen.status == 429 || seen.status == 503:
		de.NotDelivered = true
	case seen.status >= 400 && seen.status < 500:
		de.NotDelivered, de.Retryable = true, false
	case ctx.Err() != nil:
		// The kernel gave up on this attempt (shutdown, cancellation);
		// the tool may have run.
	case cctx.Err() != nil:
		de.Err = fmt.Errorf("mcp server %q: no answer within %s: %w", u.id, u.timeout, err)
	}
	return kernel.DispatchResult{}, de
}
