package cli

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
)

// An agent runs with the Finance Lead's key and its call parks for the
// CFO (the lead is an approver of the grant too). `chio approval show`
// listed the lead among the APPROVERS like any other, so the lead read a
// request awaiting their decision; the kernel never counts their vote on
// it (approval.Request.MayDecide). The line says so, as the dashboard does.
func TestShowSaysTheCallingAgentsVoteNeverCounts(t *testing.T) {
	const lead, cfo = "ed25519:lead", "ed25519:cfo"
	v := approvalView{Request: approval.Request{SubjectID: lead, SubjectPublicKey: lead, Status: approval.StatusPending,
		TrustedApprovers: []string{lead, cfo}},
		Approvers: []httpapi.ApproverName{{PublicKey: lead, DisplayName: "Finance Lead"}, {PublicKey: cfo, DisplayName: "CFO"}}}
	names := v.approverNames()
	if len(names) != 2 || !strings.Contains(names[0], "Finance Lead") || !strings.Contains(names[0], "the calling agent's key") ||
		names[1] != "CFO ("+cfo+")" {
		t.Fatalf("approvers %q; want the lead's line to say the kernel never counts the calling agent's vote, the CFO's as it was", names)
	}
}
