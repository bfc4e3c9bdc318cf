package kernel

import (
	"fmt"

	"github.com/chiokernel/chio/internal/canon"
)

// parameter_hash covers {"arguments": …, "governed_intent": …, "server_id":
// …, "tool_name": …} (ParameterHash), where the arguments and the intent
// sit one level below the top. Every client hashes that object under
// canon's rules: the Go SDK, the CLI and the MCP bridge through
// ParameterHash, the Python and TypeScript SDKs with their own strict
// canonicalizers, all refusing nesting deeper than canon.MaxDepth. chiod
// hashes the canonical parts directly (canonicalParameterHash), so it
// checks the same bound here: arguments or an intent nested MaxDepth deep
// would otherwise be accepted and hashed by chiod alone, and no client
// could sign or recompute their hash.

// checkHashedDepth refuses a canonical value whose nesting, one level down
// in the hashed object, exceeds canon.MaxDepth.
func checkHashedDepth(what string, canonical []byte) error {
	if d := nesting(canonical); d+1 > canon.MaxDepth {
		return fmt.Errorf("%w: %s: %w: %s nests %d deep; the parameter hash holds it one level down, so at most %d",
			ErrBadCall, what, canon.ErrTooDeep, what, d, canon.MaxDepth-1)
	}
	return nil
}

// nesting is the deepest container nesting of valid JSON text (an object
// or array counts one; brackets inside strings do not count).
func nesting(v []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString:
			if c == '\\' {
				i++ // the escaped character, a quote or backslash included
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
