package mcpgw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// render answers an outcome of a call to server in MCP terms. Only an
// executed call returns the tool's own result; everything else is an
// isError result (the tool did not run, or not yet) whose text tells a
// model what happened and whose _meta tells a program.
func (g *Gateway) render(server string, out *kernel.Outcome) (*mcpsdk.CallToolResult, error) {
	switch out.Status {
	case kernel.StatusAllowed:
		return g.tellAmended(out, allowed(out, g.isMCPServer(server)))
	case kernel.StatusDenied, kernel.StatusCancelled:
		what := "denied"
		if out.Status == kernel.StatusCancelled {
			what = "cancelled"
		}
		return chioResult(fmt.Sprintf("chio %s this call: %s (guard %s; receipt %s). The tool did not run.",
			what, out.Reason, orDash(out.Guard), out.ReceiptID), mcpsdk.Meta{
			MetaStatus: out.Status, MetaRequestID: out.RequestID, MetaReceiptID: out.ReceiptID,
			MetaGuard: out.Guard, MetaReason: out.Reason}), nil
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		return g.pending(out), nil
	}
	return nil, fmt.Errorf("chio: call %s has unknown status %q", out.RequestID, out.Status)
}

// pending describes a parked call and how to resume it.
func (g *Gateway) pending(out *kernel.Outcome) *mcpsdk.CallToolResult {
	deadline, summary := out.Deadline, out.Summary
	if out.ApprovalRequestID != "" && (deadline == 0 || summary == "") {
		if req, err := g.o.Kernel.Approval(out.ApprovalRequestID); err == nil {
			deadline, summary = req.ExpiresAt, req.Summary
		}
	}
	id := out.ApprovalRequestID
	if id == "" {
		id = out.RequestID
	}
	text := fmt.Sprintf("chio parked this call for human approval: approval %s, deadline %s. Approvers see: %q. "+
		"The tool has not run yet. Call %s with {\"id\":%q} to wait for the decision; "+
		"once approved, its result is this tool's result.",
		id, time.Unix(deadline, 0).UTC().Format(time.RFC3339), summary, AwaitTool, id)
	if out.Status == kernel.StatusDispatching {
		text = fmt.Sprintf("chio approved this call (approval %s) and the tool is running. Call %s with {\"id\":%q} for its result.",
			id, AwaitTool, id)
	}
	return chioResult(text, mcpsdk.Meta{MetaStatus: out.Status, MetaRequestID: out.RequestID,
		MetaApprovalID: out.ApprovalRequestID, MetaDeadline: deadline, MetaSummary: summary, MetaReceiptID: out.ReceiptID})
}

// isMCPServer says whether server is, in the policy now, an MCP server:
// only its tools answer MCP results.
func (g *Gateway) isMCPServer(server string) bool {
	s, ok := g.o.Kernel.Policy().Server(server)
	return ok && s.Transport == policy.TransportMCP
}

// allowed returns the upstream's CallToolResult (fromMCP: the call's
// server is an MCP server). The SDK encodes what we return, so
// structuredContent is handed over as the exact bytes recorded.
// With no output to return, chio says what became of the call: a model
// told "not run" calls again, so that is said only when it is so.
func allowed(out *kernel.Outcome, fromMCP bool) *mcpsdk.CallToolResult {
	output := bytes.TrimSpace(out.Output)
	if (len(output) == 0 || string(output) == "null") && out.Execution == kernel.ExecutionSucceeded {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: noOutputText(out)}},
			Meta: mcpsdk.Meta{MetaStatus: out.Status, MetaRequestID: out.RequestID, MetaExecution: out.Execution}}
	}
	if len(output) == 0 || string(output) == "null" || fromMCP && needsInput(output) {
		return chioResult(noOutputText(out), mcpsdk.Meta{MetaStatus: StatusToolError, MetaRequestID: out.RequestID,
			MetaReceiptID: out.ReceiptID, MetaToolError: out.ToolError, MetaExecution: out.Execution})
	}
	var r mcpsdk.CallToolResult
	// Read with exact member names, as MCP and the SDK read a result (and
	// so chio's record of it): encoding/json would also take, and keep the
	// last of, "StructuredContent" or "CONTENT". A duplicate name is an
	// error here (jsonv2), and the output is handed over as text.
	var sc struct {
		Content           jsontext.Value `json:"content"`
		StructuredContent jsontext.Value `json:"structuredContent"`
	}
	// Only an MCP server answers an MCP result, which has a "content"
	// array. The output of a tool on another transport (builtin, http) is
	// its own JSON, handed over whole as text, whatever its members: an
	// http API's {"content": [...], "total": N} is not an MCP result. (The
	// SDK decodes any object into a CallToolResult with empty, non-nil
	// Content, so a decoded Content says nothing.)
	if !fromMCP || jsonv2.Unmarshal(output, &sc) != nil || !bytes.HasPrefix(sc.Content, []byte("[")) || json.Unmarshal(output, &r) != nil {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: string(output)}},
			IsError: out.ToolError != ""}
	}
	if len(sc.StructuredContent) > 0 {
		r.StructuredContent = json.RawMessage(sc.StructuredContent)
	}
	dropChioMeta(r.Meta)
	return &r
}

// needsInput reports whether an MCP server's recorded result is an
// "input required" one (an elicitation or other request for the client to
// fulfil, then retry), read as the MCP SDK reads it. chio recorded it as a
// tool error (it never answers an upstream's question); passed on, the
// agent's MCP client would put the upstream's question to its user as if
// chio asked it, so the agent is told what chio recorded instead.
func needsInput(output json.RawMessage) bool {
	var r mcpsdk.CallToolResult
	return json.Unmarshal(output, &r) == nil && r.NeedsInput()
}

// chioMetaPrefix is chio's namespace in _meta: the members chio writes on
// the results it makes (MetaStatus, MetaRequestID, …).
const chioMetaPrefix = "chio/"

// dropChioMeta removes chio's members from an upstream's result _meta
// (the record keeps the upstream's bytes as sent). Only chio speaks in its
// namespace: an upstream that ran a call and answered "chio/status":
// "denied" would tell a program that reads it that the tool did not run,
// and invite it to call again.
func dropChioMeta(meta mcpsdk.Meta) {
	for k := range meta {
		if strings.HasPrefix(k, chioMetaPrefix) {
			delete(meta, k)
		}
	}
}

// noOutputText describes an allowed call that has no result to return, by
// its execution outcome.
func noOutputText(out *kernel.Outcome) string {
	switch out.Execution {
	case kernel.ExecutionNotDelivered:
		return "chio allowed this call, but it could not be delivered: the tool did not run. " + out.ToolError
	case kernel.ExecutionSucceeded:
		return "chio allowed this call; the tool ran and returned no output."
	case kernel.ExecutionToolError:
		return "chio allowed this call and the tool ran (or its server answered), but it reported an error or " +
			"chio refused its result: " + out.ToolError + ". Its effects, if any, have happened: calling it again " +
			"runs it again (request " + out.RequestID + ")."
	}
	// unknown, or not recorded: it may have run.
	return fmt.Sprintf("chio allowed this call, but cannot tell whether the tool ran: %s. It may have run: "+
		"do not call it again. Call %s with {\"id\":%q} for its recorded outcome, and check the tool's side "+
		"before trying again.", out.ToolError, AwaitTool, out.RequestID)
}

func chioResult(text string, meta mcpsdk.Meta) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}, IsError: true, Meta: meta}
}

// refused answers a call chio did not admit (no receipt: nothing ran and
// nothing was decided).
func refused(reason string) *mcpsdk.CallToolResult {
	return chioResult("chio refused this call: "+reason, mcpsdk.Meta{MetaStatus: StatusRefused, MetaReason: reason})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
