package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

type awaitArgs struct {
	ID          string          `json:"id"`
	WaitSeconds json.RawMessage `json:"wait_seconds,omitempty"` // read by awaitWait
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
	wait, err := awaitWait(args.WaitSeconds, as.g.o.PendingWait)
	if err != nil {
		return refused(err.Error()), nil
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

// awaitWait is the wait chio_await's wait_seconds asks for (def when it is
// absent or null): a whole number of seconds from 0 to MaxWait, as the
// tool's input schema says. Anything else (601, -1, 2.5, "30") is refused
// with the range, never capped or rounded: GET /v1/calls/{id}?wait=
// refuses an out-of-range wait the same way. The bound is checked before
// the conversion, which would wrap around past ~292 years.
func awaitWait(raw json.RawMessage, def time.Duration) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64) // a JSON string or boolean does not parse
	if err != nil || f != math.Trunc(f) || f < 0 || f > MaxWait.Seconds() {
		return 0, fmt.Errorf("wait_seconds must be a whole number of seconds from 0 to %d", int(MaxWait/time.Second))
	}
	return time.Duration(f) * time.Second, nil
}
