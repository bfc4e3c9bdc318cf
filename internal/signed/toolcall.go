package signed

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// A call chiod delivers to an HTTP tool server is signed with the kernel
// key, so the tool server can tell chiod's calls from anyone else's (an
// agent that reaches the tool server directly would otherwise skip every
// guard and approval). The body is sent as it is; three headers carry the
// signature:
//
//	X-Chio-Server:    the server id the call was routed to
//	X-Chio-Sent-At:   unix milliseconds on the kernel's clock (per attempt)
//	X-Chio-Signature: 128 lowercase hex = Ed25519(kernel key,
//	    "chio.tool-call.v1" || 0x00 || server || "\n" || sent_at || "\n" || hex(SHA-256(body)))
//
// The server id binds the call to one tool server (a call captured on its
// way to one cannot be replayed to another that trusts the same kernel);
// sent_at bounds replays in time, and a repeat within the window is the
// same call (same Idempotency-Key), which deduplication answers without
// running it again.

// ToolCallDomain separates tool-call signatures from every other kernel
// signature.
const ToolCallDomain = "chio.tool-call.v1"

// Tool-call signature headers.
const (
	ToolCallServerHeader    = "X-Chio-Server"
	ToolCallSentAtHeader    = "X-Chio-Sent-At"
	ToolCallSignatureHeader = "X-Chio-Signature"
)

// ToolCallMessage is what the kernel signs (under ToolCallDomain, with
// Message) for a call to server with body, sent at sentAtMs.
func ToolCallMessage(server string, sentAtMs int64, body []byte) []byte {
	sum := sha256.Sum256(body)
	b := make([]byte, 0, len(server)+1+20+1+64)
	b = append(b, server...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, sentAtMs, 10)
	b = append(b, '\n')
	return hex.AppendEncode(b, sum[:])
}
