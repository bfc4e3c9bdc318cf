package approval

import (
	"fmt"
	"strings"
)

// SkippedNote says why r waits at a later escalation tier than its
// timeouts alone would have brought it to (SkippedTiers), in the words
// every view shows (Slack, email, the dashboard, `chio approval show`);
// "" when no tier was passed over.
func (r *Request) SkippedNote() string { return SkippedTiersNote(r.SkippedTiers) }

// SkippedTiersNote is SkippedNote for tiers (0-based, as Request.Tier),
// numbered from 1 as the views number tiers; "" for none.
func SkippedTiersNote(tiers []int) string {
	if len(tiers) == 0 {
		return ""
	}
	shown := make([]string, len(tiers))
	for i, t := range tiers {
		shown[i] = fmt.Sprint(t + 1)
	}
	return fmt.Sprintf("escalated at once past tier %s: nobody there but the calling agent could decide "+
		"(the kernel never counts an agent's vote on its own call, nor a requester's)", strings.Join(shown, ", "))
}
