package policy

import (
	"maps"
	"net/mail"
	"slices"
	"strings"

	"github.com/chiokernel/chio/internal/keys"
)

// Validation of a grant's [grants.approval] table: what may suspend a
// call, who may answer, through which channels, and escalation.

// approvalTrigger returns the key path (under constraints) of the first
// constraint that can suspend a call for approval, or nil.
func approvalTrigger(c *Constraints) []string {
	switch {
	case c.RequireApprovalAbove != nil:
		return k("require_approval_above")
	case c.RequireApprovalAlways:
		return k("require_approval_always")
	case c.RequireApprovalFirstN > 0:
		return k("require_approval_first_n")
	case len(c.RequireApprovalForActions) > 0:
		return k("require_approval_for_actions")
	case len(c.RequireApprovalWhen) > 0:
		return k("require_approval_when")
	}
	for _, guard := range slices.Sorted(maps.Keys(c.OnTrigger)) {
		if c.OnTrigger[guard] == OnTriggerRequireApproval {
			return k("on_trigger", guard)
		}
	}
	return nil
}

func (v *validator) approval(base []string, g *Grant) {
	a := g.Approval
	n := len(a.Approvers)
	switch {
	case n == 0:
		v.at(base, nil, "grant %q has an approval table but no approvers; an empty approver set can never approve, "+
			"so add at least one [[grants.approval.approvers]]", g.ID)
	case n > MaxApproversPerGrant:
		v.at(base, k("approvers"), "grant %q has %d approvers; the limit is %d", g.ID, n, MaxApproversPerGrant)
		return // and spare the pairwise checks below
	}
	names := map[string]bool{}
	readAlike := map[string]string{} // displayNameKey → the first display_name with it
	for j := range a.Approvers {
		ap, ab := &a.Approvers[j], k("approvers", idx(j))
		if ap.PublicKey.IsZero() {
			v.at(base, append(ab, "public_key"), "approver needs a public_key (\"ed25519:…\", as printed by chio keygen)")
		} else {
			for _, other := range a.Approvers[:j] {
				if ap.PublicKey.Equal(other.PublicKey) {
					v.at(base, append(ab, "public_key"), "approvers %q and %q have the same public key; quorum counts distinct keys",
						other.DisplayName, ap.DisplayName)
					break
				}
			}
			// The authority key mints capabilities for any key, so its
			// holder can request any call: as for a requester, it may
			// not also approve (it would ask and approve alone).
			if ak := v.p.Kernel.AuthorityKey; ak != "" && ap.PublicKey.String() == ak {
				v.at(base, append(ab, "public_key"), "approver %q has the key of [kernel] authority_key, which issues capabilities; "+
					"nobody may approve calls they can request: give the approver a key of their own", ap.DisplayName)
			}
		}
		switch {
		case ap.DisplayName == "":
			v.at(base, append(ab, "display_name"), "approver needs a display_name (tiers, messages and receipts name approvers by it)")
		case checkDisplayName(ap.DisplayName) != nil:
			v.at(base, append(ab, "display_name"), "display_name %q: %v", ap.DisplayName, checkDisplayName(ap.DisplayName))
		case names[ap.DisplayName]:
			v.at(base, append(ab, "display_name"), "display_name %q is used by two approvers of this grant", ap.DisplayName)
		case readAlike[displayNameKey(ap.DisplayName)] != "":
			v.at(base, append(ab, "display_name"), "display_name %q reads the same as approver %q's (letter case, width, spaces, accents "+
				"or joiners aside): receipts and messages name approvers by display_name, so give each a name of its own",
				ap.DisplayName, readAlike[displayNameKey(ap.DisplayName)])
		}
		names[ap.DisplayName] = true
		if k := displayNameKey(ap.DisplayName); readAlike[k] == "" {
			readAlike[k] = ap.DisplayName
		}
		if e := ap.Contact.Email; e != "" {
			if _, err := mail.ParseAddress(e); err != nil {
				v.at(base, append(ab, "contact", "email"), "contact email %q is not an email address", e)
			}
		}
		if s := ap.Contact.Slack; s != "" {
			if err := checkLabel(s); err != nil {
				v.at(base, append(ab, "contact", "slack"), "contact slack %q: %v", s, err)
			}
		}
	}
	if a.Quorum < 1 {
		v.at(base, k("quorum"), "quorum must be at least 1, not %d", a.Quorum)
	} else if n > 0 && a.Quorum > n {
		v.at(base, k("quorum"), "quorum = %d but grant %q has only %d approvers: it could never be met", a.Quorum, g.ID, n)
	}
	if a.DenyQuorum < 1 {
		v.at(base, k("deny_quorum"), "deny_quorum must be at least 1, not %d", a.DenyQuorum)
	} else if n > 0 && a.DenyQuorum > n {
		v.at(base, k("deny_quorum"), "deny_quorum = %d but grant %q has only %d approvers: a denial could never complete", a.DenyQuorum, g.ID, n)
	}
	v.intRange(base, "timeout_seconds", a.TimeoutSeconds, 1, MaxApprovalTimeoutSeconds)
	switch a.TimeoutAction {
	case TimeoutDeny, TimeoutAutoApproveAdvisory:
	case TimeoutEscalate:
		if a.Escalation == nil || len(a.Escalation.Tiers) == 0 {
			v.at(base, k("timeout_action"), "timeout_action = \"escalate\" needs [grants.approval.escalation] "+
				"with at least one [[grants.approval.escalation.tiers]]")
		}
	default:
		v.at(base, k("timeout_action"), "timeout_action = %q: use \"deny\", \"escalate\" or \"auto_approve_advisory\"", a.TimeoutAction)
	}
	v.channelList(base, a.Channels)
	v.requesters(base, a)
	if a.Escalation != nil {
		if a.TimeoutAction != TimeoutEscalate {
			// The kernel reads tiers only under "escalate": otherwise every
			// approver, a last-tier one too, would decide from the start,
			// silently wider than the tiers the file shows.
			v.at(base, k("escalation"), "escalation tiers apply only with timeout_action = \"escalate\" (it is %q): "+
				"without it every approver of grant %q, whatever their tier, may decide from the start; "+
				"set timeout_action = \"escalate\" or remove [grants.approval.escalation]", a.TimeoutAction, g.ID)
		}
		v.escalation(sub(base, "escalation"), a)
	}
	if a.SlackCustodial {
		v.custodial(base, a)
	}
}

// channelList checks that each named channel exists and is configured.
func (v *validator) channelList(base []string, chans []string) {
	if len(chans) == 0 {
		v.at(base, k("channels"), "channels must list at least one channel (%s)", strings.Join(channelNames, ", "))
		return
	}
	c := v.p.Channels
	for j, ch := range chans {
		p := k("channels", idx(j))
		configured := map[string]bool{"webhook": c.Webhook != nil, "slack": c.Slack != nil, "email": c.Email != nil}
		switch {
		case !slices.Contains(channelNames, ch):
			v.at(base, p, "unknown channel %q; channels are %s", ch, strings.Join(channelNames, ", "))
		case ch == "dashboard" && !c.Dashboard.Enabled:
			v.at(base, p, "channel \"dashboard\" is used (it is the default when an approval lists no channels) "+
				"but [channels.dashboard] has enabled = false")
		case ch == "webhook" || ch == "slack" || ch == "email":
			if !configured[ch] {
				v.at(base, p, "channel %q is used but [channels.%s] is not configured", ch, ch)
			}
		}
	}
}

func (v *validator) requesters(base []string, a *Approval) {
	if len(a.Requesters) > MaxRequesters {
		v.at(base, k("requesters"), "%d requesters; the limit is %d", len(a.Requesters), MaxRequesters)
		return
	}
	for j, r := range a.Requesters {
		p := k("requesters", idx(j))
		key, err := keys.ParsePublicKey(r)
		if err != nil {
			v.at(base, p, "requester is not an acceptable Ed25519 public key: %v", err)
			continue
		}
		if ap, ok := a.ApproverByKey(key); ok {
			v.at(base, p, "requester %s is also the key of approver %q; nobody may approve calls they can request", r, ap.DisplayName)
		}
	}
}

func (v *validator) escalation(base []string, a *Approval) {
	e := a.Escalation
	switch e.TerminalAction {
	case TimeoutDeny, TimeoutAutoApproveAdvisory:
	default:
		v.at(base, k("terminal_action"), "terminal_action = %q: use \"deny\" or \"auto_approve_advisory\"", e.TerminalAction)
	}
	if len(e.Tiers) > MaxTiers {
		v.at(base, k("tiers"), "%d escalation tiers; the limit is %d", len(e.Tiers), MaxTiers)
		return
	}
	for j := range e.Tiers {
		t, tb := &e.Tiers[j], k("tiers", idx(j))
		distinct := map[string]bool{}
		if len(t.Approvers) == 0 {
			v.at(base, append(tb, "approvers"), "escalation tier %d names no approvers", j+1)
		}
		for m, name := range t.Approvers {
			if _, ok := a.ApproverByName(name); !ok {
				v.at(base, append(tb, "approvers", idx(m)), "escalation tier %d names %q, who is not among this grant's approvers (by display_name)", j+1, name)
				continue
			}
			distinct[name] = true
		}
		if len(distinct) > 0 && len(distinct) < a.Quorum {
			v.at(base, append(tb, "approvers"), "escalation tier %d has %d approvers but quorum = %d: it could never approve", j+1, len(distinct), a.Quorum)
		}
		switch {
		case t.TimeoutSeconds < 1:
			v.at(base, append(tb, "timeout_seconds"), "escalation tier %d needs timeout_seconds more than 0", j+1)
		case t.TimeoutSeconds > MaxApprovalTimeoutSeconds:
			v.at(base, append(tb, "timeout_seconds"), "escalation tier %d: timeout_seconds = %d is more than 30 days", j+1, t.TimeoutSeconds)
		}
		// A tier without channels inherits the approval's, already checked.
		if !slices.Equal(t.Channels, a.Channels) {
			v.channelList(sub(base, tb...), t.Channels)
		}
	}
}

// custodial checks slack_custodial: chiod signs for an approver's Slack user,
// so every approver needs one and Slack must be a channel of the grant.
func (v *validator) custodial(base []string, a *Approval) {
	usesSlack := slices.Contains(a.Channels, "slack")
	if a.Escalation != nil {
		for _, t := range a.Escalation.Tiers {
			usesSlack = usesSlack || slices.Contains(t.Channels, "slack")
		}
	}
	if !usesSlack {
		v.at(base, k("slack_custodial"), "slack_custodial = true but no channel of this grant is \"slack\"")
	}
	for j, ap := range a.Approvers {
		if c := strings.TrimSpace(ap.Contact.Slack); !slackUserIDRE.MatchString(c) {
			v.at(base, k("approvers", idx(j)), "slack_custodial = true needs contact.slack set to approver %q's Slack user id (U… or W…): chiod signs for that user, and handles can be renamed", ap.DisplayName)
		}
	}
}
