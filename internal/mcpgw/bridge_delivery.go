package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the bridge to one MCP client on in and out
// (StdioTransport, `chio mcp serve`) until the session ends. An answer
// of chio's that does not reach the client — its write to out failed, or
// the session was closing and the SDK dropped it unwritten — is named on
// the log (deliveries): the call was decided, and may have run, yet the
// client never learns its request id.
func (b *Bridge) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	d := &deliveries{log: b.o.Log, pending: map[string]int{}}
	b.deliveries.Store(d)
	err := b.srv.Run(ctx, stdioTransport(in, out, d.written))
	d.close()
	return err
}

// errSessionEnded is why an answer was never written: the session with
// the client ended first.
var errSessionEnded = errors.New("the session with the MCP client ended before the answer was written")

// deliveries follows chio's answers (results naming a request id) from
// the handler that returns them until their line is written to the
// client.
type deliveries struct {
	log     *slog.Logger
	mu      sync.Mutex
	pending map[string]int // request id → answers returned, not yet written
	closed  bool
}

// answered records res, a handler's answer, on its way to the client.
func (d *deliveries) answered(res *mcpsdk.CallToolResult) {
	id, _ := res.Meta[MetaRequestID].(string)
	if id == "" {
		return
	}
	d.mu.Lock()
	closed := d.closed
	if !closed {
		d.pending[id]++
	}
	d.mu.Unlock()
	if closed {
		d.lost(id, errSessionEnded)
	}
}

// written is told of each line written to the client, and err, the
// write's error.
func (d *deliveries) written(line []byte, err error) {
	if !bytes.Contains(line, []byte(MetaRequestID)) {
		return
	}
	var msg struct {
		Result *struct {
			Meta struct {
				RequestID string `json:"chio/request_id"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Result == nil || msg.Result.Meta.RequestID == "" {
		return
	}
	id := msg.Result.Meta.RequestID
	d.mu.Lock()
	n, ok := d.pending[id]
	if n <= 1 {
		delete(d.pending, id)
	} else {
		d.pending[id] = n - 1
	}
	d.mu.Unlock()
	if ok && err != nil {
		d.lost(id, err)
	}
}

// close names every answer still unwritten when the session ended, and
// any returned after it.
func (d *deliveries) close() {
	d.mu.Lock()
	d.closed = true
	left := d.pending
	d.pending = nil
	d.mu.Unlock()
	for id := range left {
		d.lost(id, errSessionEnded)
	}
}

func (d *deliveries) lost(id string, err error) {
	d.log.Warn("chio answered a call but the answer did not reach the MCP client: call "+AwaitTool+
		" with {\"id\":\""+id+"\"} or run `chio await "+id+" --key <agent key>` for its outcome",
		"request_id", id, "err", err)
}
