package mcpgw

import (
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// unreadable answers a call, or a chio_await of id (a request or approval
// id), whose outcome chio could not read: the store failed while a parked
// call was held open (minutes, while a human decides), or when chio_await
// read it. The call was submitted, may stay parked and may yet run, so the
// answer is what submitError gives a call whose outcome was not recorded:
// an isError result naming the id to await, never a JSON-RPC error (a
// client reports that as a failed call, and its retry is a new request id:
// a second call) and never the store's own words (a PostgreSQL error names
// the host, user and database), which go to the log.
func (g *Gateway) unreadable(id string, err error) *mcpsdk.CallToolResult {
	reason, cause := httpapi.WithoutStoreWords(err)
	if cause != nil {
		g.o.Log.Warn("answered unrecorded: "+kernel.ErrUnavailable.Error(), "id", id, "err", cause.Error())
	}
	meta := mcpsdk.Meta{MetaStatus: StatusUnrecorded, MetaReason: reason}
	if strings.HasPrefix(id, "ar-") {
		meta[MetaApprovalID] = id
	} else {
		meta[MetaRequestID] = id
	}
	return chioResult(fmt.Sprintf("chio could not read this call's outcome (%s). The call stands and may run, "+
		"or have run: do not call it again. Call %s with {\"id\":%q} for its outcome.", reason, AwaitTool, id), meta)
}
