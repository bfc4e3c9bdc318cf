package mcpgw

import (
	"fmt"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A call refused because its agent has its most calls in flight was never
// decided: the model reads a refusal, not "the tool may have run".
func TestCallOverTheAgentsShareIsARefusal(t *testing.T) {
	err := fmt.Errorf("%w: this agent already has 256 calls in flight", kernel.ErrTooManyCalls)
	res := submitError("req-1", err)
	if got := res.Meta[MetaStatus]; got != StatusRefused {
		t.Fatalf("status %v, want %s: %+v", got, StatusRefused, res)
	}
}
