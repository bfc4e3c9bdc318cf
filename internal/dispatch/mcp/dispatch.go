package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// classify turns a failed tools/call into the kernel's delivery terms.
// NotDelivered lets the kernel send the call again even under
// at_most_once, so it is claimed only when the upstream certainly did not
// act on this tools/call:
//
//   - the POST never left chio (a dead pipe, a refused connection, the
//     session already failed): NotDelivered, and Retryable;
//   - the tools/call POST itself was answered with a status by which a
//     server refuses a request before acting on it (refusedUnrun: 404 for a
//     session it no longer knows, 401/403, 429, …): NotDelivered;
//   - it left and was accepted (2xx), or the answer was lost, or any other
//     status came back (a 5xx, a 503 from a proxy whose backend may have
//     run it): delivery unknown — the tool may have run. A session lost
//     after the POST was accepted (the stream's resume met 404) is this
//     case, not a refusal;
//   - the server answered with a JSON-RPC error (unknown tool, invalid
//     params) and a 2xx status (or on stdio): the server refused the
//     call; a ToolError, not an error. With another status the status
//     decides, as above;
//   - the answer was too large (a message the tap is sure was this call's
//     answer, see tap.overflow): a ToolError (asking again gets the same).
//     An oversized message that is not certainly its answer is no call's:
//     the calls its failed session ends settle as above.
func (u *Upstream) classify(ctx, cctx context.Context, c *conn, seen slot, err error) (kernel.DispatchResult, error) {
	de := &kernel.DeliveryError{Err: fmt.Errorf("mcp server %q: %w", u.id, err), Retryable: true}
	if errors.Is(err, mcpsdk.ErrSessionMissing) {
		// The server forgot the session (it restarted): reconnect. Whether
		// it ran this call is decided below, by what its POST met.
		u.drop(c)
	}
	if !seen.sent {
		// Checked first: whatever failed the session (another call's
		// oversized answer, a dead pipe), this call never left chio.
		de.NotDelivered = true
		if ctx.Err() == nil && cctx.Err() == nil {
			u.drop(c) // the transport failed under us
		}
		return kernel.DispatchResult{}, de
	}
	if seen.oversize {
		return kernel.DispatchResult{Output: json.RawMessage("null"),
			ToolError: fmt.Sprintf("the upstream sent a message larger than %d bytes", MaxMessageBytes)}, nil
	}
	// Only an error the server sent is its answer; the SDK also reports
	// its own transport failures as JSON-RPC errors (-32005 "rejected by
	// transport"), which the tap never saw arrive. And only one that came
	// with the call's POST accepted (2xx; 0 on stdio): a POST answered
	// with another status is judged by that status below, whatever its
	// body says — a proxy's 504 carries a JSON-RPC error too, while its
	// backend may be running the tool.
	var werr *jsonrpc.Error
	if seen.answered && (seen.status == 0 || seen.status/100 == 2) && errors.As(err, &werr) {
		return kernel.DispatchResult{Output: json.RawMessage("null"),
			ToolError: clip(fmt.Sprintf("mcp error %d: %s", werr.Code, werr.Message), maxToolErrorText)}, nil
	}
	switch {
	case refusedUnrun(seen.status):
		de.NotDelivered = true
		// Asking again gets the same answer, except from a server that
		// is busy (429) or has forgotten the session (reconnect first).
		de.Retryable = seen.status == http.StatusTooManyRequests || errors.Is(err, mcpsdk.ErrSessionMissing)
	case seen.status >= 400 && seen.status < 500:
		// Some other client error: it may have been acted on, and asking
		// again gets the same answer.
		de.Retryable = false
	case ctx.Err() != nil:
		// The kernel gave up on this attempt (shutdown, cancellation);
		// the tool may have run.
	case cctx.Err() != nil:
		de.Err = fmt.Errorf("mcp server %q: no answer within %s: %w", u.id, u.timeout, err)
	}
	return kernel.DispatchResult{}, de
}

// refusedUnrun reports whether status, answering a tools/call POST, means
// the server (or a proxy in front of it) refused the request before
// acting on it: the HTTP semantics of each leave no room for a tool that
// ran. 503 is not among them (a proxy answers 503 when its backend dropped
// a request it may have started), nor are 409, 410, 412 or 422, which
// describe the outcome of processing the request.
func refusedUnrun(status int) bool {
	switch status {
	case http.StatusBadRequest, // malformed: not processed (RFC 9110 §15.5.1)
		http.StatusUnauthorized, http.StatusForbidden,
		http.StatusNotFound, // MCP: the session is unknown; or no endpoint
		http.StatusMethodNotAllowed, http.StatusNotAcceptable,
		http.StatusRequestTimeout, // the request did not arrive whole
		http.StatusLengthRequired, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong,
		http.StatusUnsupportedMediaType, http.StatusTooManyRequests, http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return false
}
