package mcpgw

import (
	"encoding/json"
	"fmt"
	"math"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

// agentIntent is the governed intent the agent's MCP client put in
// _meta["chio/governed_intent"], in canonical form: the bytes the bridge
// signs into the parameter hash and sends to chiod (nil when there is
// none; JSON null is none, as on POST /v1/calls).
//
// The SDK hands the bridge _meta already decoded, numbers as float64, so
// the bridge cannot sign the bytes its client sent; it signs what the
// client meant, and refuses what it cannot be sure of, before anything is
// signed or sent:
//   - anything but a JSON object;
//   - an integral number of magnitude 2^53 or more: the decode may have
//     rounded it (9007199254740993 arrives as 9007199254740992), and
//     signing it would sign a different amount;
//   - anything the kernel's own intent decoding refuses (kernel.ParseIntent,
//     the check Submit makes: unknown or case-folded members, a max_amount
//     without a currency, negative or fractional units, over-long or
//     unprintable text, the size limits).
//
// A fraction is signed in its shortest form, which denotes exactly the
// double the client's number decoded to.
func agentIntent(meta mcpsdk.Meta) (json.RawMessage, error) {
	v, ok := meta[MetaIntent]
	if !ok || v == nil {
		return nil, nil
	}
	if _, isObject := v.(map[string]any); !isObject {
		return nil, fmt.Errorf("_meta[%q] must be a JSON object: {\"purpose\": …, \"max_amount\": {\"units\": …, \"currency\": …}}", MetaIntent)
	}
	if err := checkDecodedNumbers(v); err != nil {
		return nil, fmt.Errorf("_meta[%q]: %w", MetaIntent, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("_meta[%q]: %w", MetaIntent, err)
	}
	intent, err := canon.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("_meta[%q]: %w", MetaIntent, err)
	}
	if _, err := kernel.ParseIntent(intent); err != nil {
		return nil, err // "malformed call: governed_intent…"
	}
	return intent, nil
}

// checkDecodedNumbers refuses, anywhere in v, a number the decoding may
// have changed, and any value of a type JSON decoding does not produce
// (so nothing unforeseen is signed).
func checkDecodedNumbers(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if err := checkDecodedNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkDecodedNumbers(e); err != nil {
				return err
			}
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) >= 1<<53 {
			return fmt.Errorf("the number %.0f is 2^53 or more in magnitude, and may not be the number sent: "+
				"send it as a string", x)
		}
	case string, bool, nil:
	default:
		return fmt.Errorf("unexpected %T in the decoded intent", v)
	}
	return nil
}
