package mcpgw

import (
	"context"
	"errors"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

type awaitArgs struct {
	ID          string `json:"id"`
	WaitSeconds *int   `json:"wait_seconds,omitempty"`
}

// await is chio_await: wait for one of the agent's own parked calls and
// answer like the call itself would have. A call of another agent answers
// exactly like one that does not exist.
func (as *agentServer) await(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	a, ok := agentOf(req.Extra.TokenInfo)
	if !ok {
		return nil, errors.New("unauthenticated")
	}
	var args awaitArgs
	if err := canon.Unmarshal(req.Params.Arguments, &args); err != nil || args.ID == "" || len(args.ID) > kernel.MaxRequestIDLen {
		return refused(`arguments must be {"id": "ar-… or request id", "wait_seconds": N}`), nil
	}
	wait := as.g.o.PendingWait
	if args.WaitSeconds != nil {
		if *args.WaitSeconds < 0 {
			return refused("wait_seconds must be ≥ 0"), nil
		}
		wait = secondsUpTo(*args.WaitSeconds, MaxWait)
	}
	k := as.g.o.Kernel
	notFound := refused("no parked call " + args.ID + " of this agent")
	requestID := args.ID
	if strings.HasPrefix(args.ID, "ar-") {
		r, err := k.Approval(args.ID)
		if errors.Is(err, kernel.ErrNotFound) || err == nil && r.SubjectPublicKey != a.subject.String() {
			return notFound, nil
		} else if err != nil {
			return as.g.unreadable(args.ID, err), nil
		}
		requestID = r.RequestID
	}
	rec, err := k.Call(requestID)
	if errors.Is(err, kernel.ErrNotFound) || err == nil && rec.Subject != a.subject.String() {
		return notFound, nil
	} else if err != nil {
		return as.g.unreadable(args.ID, err), nil
	}
	return as.g.answer(ctx, req, a, rec.Server, kernel.OutcomeOf(rec), wait)
}
