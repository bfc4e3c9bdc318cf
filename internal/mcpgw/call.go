package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// Metadata members a tools/call may carry (the bridge sets them).
const (
	// MetaProof is the call proof: {"request_id","issued_at","signature"},
	// the same chio.call.v1 signature POST /v1/calls carries.
	MetaProof = "chio/proof"
	// MetaIntent is the governed intent (it is covered by parameter_hash).
	MetaIntent = "chio/governed_intent"
	// MetaWait asks for a pending wait other than the server's default
	// (whole seconds, up to MaxWait).
	MetaWait = "chio/wait_seconds"
	// MetaStatus and the members below describe a result chio made.
	MetaStatus     = "chio/status"
	MetaRequestID  = "chio/request_id"
	MetaReceiptID  = "chio/receipt_id"
	MetaApprovalID = "chio/approval_id"
	MetaDeadline   = "chio/deadline"
	MetaSummary    = "chio/summary"
	MetaGuard      = "chio/guard"
	MetaReason     = "chio/reason"
	MetaToolError  = "chio/tool_error"
	// MetaExecution is what became of an allowed call at the tool
	// (kernel.Execution*: succeeded, tool_error, not_delivered, unknown).
	MetaExecution   = "chio/execution"
	StatusRefused   = "refused" // the call was not admitted (no receipt)
	StatusToolError = "tool_error"
	// StatusUnrecorded: chio has no outcome to give yet (its store failed
	// mid-call); the call may have run: await chio/request_id.
	StatusUnrecorded = "unrecorded"
)

// CallProof is the value of _meta["chio/proof"].
type CallProof struct {
	RequestID string `json:"request_id"`
	IssuedAt  int64  `json:"issued_at"`
	Signature string `json:"signature"`
}

// callHandler handles tools/call for one tool: validate against the tool's
// inputSchema (an MCP upstream's, or the policy's input_schema), then
// submit the signed call exactly as POST /v1/calls does, then answer in
// MCP terms.
func (as *agentServer) callHandler(server, tool string) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		a, ok := agentOf(req.Extra.TokenInfo)
		if !ok {
			return nil, errors.New("unauthenticated")
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		if len(args) > kernel.MaxArgumentsBytes {
			return refused(fmt.Sprintf("arguments larger than %d bytes", kernel.MaxArgumentsBytes)), nil
		}
		if err := canon.Check(args); err != nil {
			return refused("arguments: " + err.Error()), nil
		}
		// Before the pipeline: a malformed call never becomes a receipt
		// or a question to a human. (The kernel's SchemaGuard checks again,
		// for every front door and for amended arguments.)
		if err := as.g.o.Catalog.ValidateArguments(server, tool, args); err != nil {
			return refused(err.Error()), nil
		}
		// The same for the schema the policy declares (input_schema on an
		// http tool); the kernel's input_schema guard checks again, under
		// the policy its decision is made with.
		if s := as.g.o.Kernel.Policy().InputSchema(server, tool); s != nil {
			if err := s.Validate(args); err != nil {
				return refused(err.Error()), nil
			}
		}
		proof, err := callProof(req.Params.Meta)
		if err != nil {
			return refused(err.Error()), nil
		}
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		intent, err := rawIntent(req.Params.Meta, header)
		if err != nil {
			return refused(err.Error()), nil
		}
		call := &kernel.ToolCall{RequestID: proof.RequestID, Capability: a.capRaw, Server: server, Tool: tool,
			Operation: "invoke", Arguments: args, GovernedIntent: intent,
			Proof: kernel.Proof{IssuedAt: proof.IssuedAt, Signature: proof.Signature}}
		out, err := as.g.o.Kernel.Submit(ctx, call)
		if err != nil {
			return submitError(call.RequestID, err), nil
		}
		return as.g.answer(ctx, req, a, server, out, waitFor(req.Params.Meta, as.g.o.PendingWait))
	}
}

// callProof reads the proof from _meta. Without a proof there is no call:
// the gateway cannot sign for the agent.
func callProof(meta mcpsdk.Meta) (CallProof, error) {
	var p CallProof
	v, ok := meta[MetaProof]
	if !ok {
		return p, errors.New("this call carries no chio proof: every call must be signed by the agent's key; " +
			"connect your MCP client through `chio mcp serve`, which signs each call")
	}
	raw, err := json.Marshal(v)
	if err == nil {
		err = canon.Unmarshal(raw, &p)
	}
	if err != nil || p.RequestID == "" || p.Signature == "" {
		return p, fmt.Errorf("_meta[%q] must be {request_id, issued_at, signature}", MetaProof)
	}
	return p, nil
}

// waitFor is the pending wait a call asked for, within (0, MaxWait].
func waitFor(meta mcpsdk.Meta, def time.Duration) time.Duration {
	if f, ok := meta[MetaWait].(float64); ok && f >= 0 {
		if f >= MaxWait.Seconds() { // before the conversion, which would wrap
			return MaxWait
		}
		return time.Duration(f) * time.Second
	}
	return def
}

// submitError answers a call for which Submit returned no outcome.
// Refusals of this call (bad proof, reused id, malformed) are results the
// model can read: nothing was decided. Any other error (the store failing,
// chiod stopping) may come after the decision, even after the tool ran
// (its settlement could not be committed). An MCP client cannot retry
// with the same request id — its retry is a new call, and the tool would
// run again — so the answer is never "retry": it names the request id to
// await.
func submitError(requestID string, err error) *mcpsdk.CallToolResult {
	// A call that may have run is never a refusal, whatever store error
	// (a conflict) its failure also carries.
	for _, refusal := range []error{kernel.ErrBadProof, kernel.ErrStaleProof, kernel.ErrCapabilityInvalid,
		kernel.ErrBadCall, kernel.ErrRequestUsed, kernel.ErrConflict, kernel.ErrTooManyCalls, canon.ErrInvalid, canon.ErrDuplicateKey,
		canon.ErrUnsafeInteger, canon.ErrTooDeep, canon.ErrNumberRange, canon.ErrTrailingData} {
		if errors.Is(err, refusal) && !errors.Is(err, kernel.ErrOutcomeUnknown) {
			return refused(err.Error())
		}
	}
	// Without the store's own words (they name the database): logged.
	reason, cause := httpapi.WithoutStoreWords(err)
	if cause != nil {
		slog.Warn("answered unrecorded: "+kernel.ErrUnavailable.Error(), "request_id", requestID, "err", cause.Error())
	}
	return chioResult(fmt.Sprintf("chio could not record this call's outcome yet (%s). The tool may have run: "+
		"do not call it again. Call %s with {\"id\":%q} for its outcome. (If %s finds no call with this id, "+
		"once chio is healthy again, chio never decided it and the tool did not run.)", reason, AwaitTool, requestID, AwaitTool),
		mcpsdk.Meta{MetaStatus: StatusUnrecorded, MetaRequestID: requestID, MetaReason: reason})
}

// answer turns an outcome of a call to server into a result, holding a
// parked call open for up to wait.
func (g *Gateway) answer(ctx context.Context, req *mcpsdk.CallToolRequest, a *agent, server string, out *kernel.Outcome, wait time.Duration) (*mcpsdk.CallToolResult, error) {
	if kernel.InFlight(out.Status) && wait > 0 {
		rec, err := g.wait(ctx, req, a, out.RequestID, out.ApprovalRequestID, wait)
		if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
			// The client went away, or ended its session (its DELETE ends
			// the wait's own context): no one reads an answer.
			return nil, err
		}
		if err != nil {
			return g.unreadable(out.RequestID, err), nil // the store failed reading the call
		}
		if rec != nil {
			out = kernel.OutcomeOf(rec)
		}
	}
	res, err := g.render(server, out)
	if err != nil {
		return g.unreadable(out.RequestID, err), nil
	}
	return res, nil
}

// wait blocks until the call leaves pending/dispatching, wait passes, the
// client goes or chiod shuts down (CloseSessions), sending progress notifications if the client asked for
// them. It subscribes before reading the record, so no transition is
// missed. A nil record means "still as it was".
func (g *Gateway) wait(ctx context.Context, req *mcpsdk.CallToolRequest, a *agent, requestID, approvalID string, wait time.Duration) (*kernel.CallRecord, error) {
	k := g.o.Kernel
	select {
	case <-g.closing: // chiod is shutting down: none starts
		return nil, nil
	default:
	}
	if !g.waits.acquire(a.id()) {
		return nil, nil
	}
	defer g.waits.release(a.id())
	if req.Session != nil {
		// Ended by a DELETE of its session (sessionwaits.go).
		var endWait context.CancelFunc
		ctx, endWait = context.WithCancel(ctx)
		defer endWait()
		defer g.sessionWaits.add(sessionWaitKey(a.id(), req.Session.ID()), endWait)()
	}
	events, cancel, ok := k.Subscribe(kernel.PoolWait)
	if !ok {
		return nil, nil
	}
	defer cancel()
	rec, err := k.Call(requestID)
	if err != nil || !kernel.InFlight(rec.Status) {
		return rec, err
	}
	token := req.Params.GetProgressToken()
	start := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// A short wait still gets progress: at least four per wait.
	tick := time.NewTicker(max(min(g.o.ProgressEvery, wait/4), 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case e, open := <-events:
			if !open || e.MayEnd(requestID, approvalID) {
				rec, err := k.Call(requestID)
				if err != nil || !open || !kernel.InFlight(rec.Status) {
					return rec, err
				}
			}
		case <-tick.C:
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: token,
					Progress: time.Since(start).Seconds(), Total: wait.Seconds(),
					Message: "waiting for a human to decide " + approvalID})
			}
		case <-timer.C:
			return k.Call(requestID)
		case <-g.closing:
			// chiod is shutting down: answered as the call is now.
			return k.Call(requestID)
		case <-ctx.Done():
			// The client went away, or ended its session: the call stays
			// parked; chio_await or `chio await` fetches its outcome later.
			return nil, ctx.Err()
		}
	}
}
