package mcpgw

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errRoundedID refuses a POST /mcp body holding a message whose id the SDK
// would not read as itself (otherID, as chio mcp serve refuses it).
var errRoundedID = errors.New("invalid request: an id must be a string or an integer a float64 holds exactly " +
	"(the MCP SDK would answer 9.5 as 9, 9007199254740993 as 9007199254740992)")

// roundedID reports whether body, one JSON-RPC message or a batch of them,
// holds a message whose id is a number the SDK reads as another (otherID):
// its answer would resolve another request the client may be waiting for.
func roundedID(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return otherID(body)
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return false // not a batch the SDK takes either
	}
	for _, m := range msgs {
		if otherID(m) {
			return true
		}
	}
	return false
}
