package kernel

import (
	"slices"

	"github.com/chiokernel/chio/approval"
)

// endChannels lists the channels told of req's end: its current tier's
// and those of every tier before it, under the policy in force. A request
// escalated from a tier that posted it in Slack to a tier without Slack
// was shown there with its Approve / Deny buttons; told of its end through
// the current tier's channels only, that message would offer them for
// good. A channel told of an end it never showed does nothing with it
// (email ignores endings; Slack posts nothing for a request it has no
// message of).
func (k *Kernel) endChannels(req *approval.Request) []string {
	out := slices.Clone(req.Channels)
	g, ok := k.Policy().Grant(req.PolicyID)
	if !ok || g.Approval == nil {
		return out
	}
	for tier := range req.Tier {
		_, chs, _ := tierView(g.Approval, tier)
		for _, c := range chs {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
