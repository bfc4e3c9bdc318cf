package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A request the kernel passed over its first tier (nobody there but the
// calling agent could decide) reaches tier 2's approvers at once: the
// message says why it is escalated with no earlier tier's wait.
func TestPassedOverTierIsExplained(t *testing.T) {
	req := &approval.Request{ApprovalID: "ar-1", Status: approval.StatusPending, Kind: approval.KindToolCall, ToolServer: "pay",
		ToolName: "refund", Quorum: 1, Tier: 1, SkippedTiers: []int{0}}
	blocks, _, _ := (&Channel{}).render(req)
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "escalated at once past tier 1: nobody there but the calling agent could decide") {
		t.Fatalf("the message does not say why tier 1 was passed over:\n%s", raw)
	}
}
