package policy

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/chiokernel/chio/internal/keys"
)

// Every check fails closed: anything ambiguous, unreachable or unsafe is an
// error here rather than a surprise at call time. Messages say what is wrong
// and, where it is not obvious, what to write instead.

// Channels an approval may name.
// slackTeamID is a Slack workspace id ("T…"): what a click's payload
// names as its team and its user's team_id.
var slackTeamID = regexp.MustCompile(`^T[A-Z0-9]{2,20}$`)

var channelNames = []string{"webhook", "slack", "email", "dashboard", "poll", "terminal"}

// Guards that on_trigger may route to approval instead of denial. The
// approval triggers themselves (require_approval_*) already ask a human.
var routableGuards = []string{"forbidden_paths", "allowed_paths", "max_calls_per_minute", "governed_intent_required"}

type validator struct {
	p       *Policy
	probs   *problems
	servers map[string]*Server
}

func validate(p *Policy, probs *problems) {
	v := &validator{p: p, probs: probs, servers: map[string]*Server{}}
	v.kernel()
	v.receipts()
	v.store()
	v.channelConfigs()
	v.serverList()
	v.grantList()
}

// at reports a problem with the key at base+rest.
func (v *validator) at(base, rest []string, format string, args ...any) {
	v.probs.at(sub(base, rest...), format, args...)
}

// k builds a key path.
func k(parts ...string) []string { return parts }

// sub extends a path in fresh storage, so that sibling paths never share it.
func sub(base []string, rest ...string) []string { return append(slices.Clip(base), rest...) }

func idx(i int) string { return strconv.Itoa(i) }

func (v *validator) kernel() {
	kn, base := v.p.Kernel, k("kernel")
	listenErr := checkHostPort(kn.Listen, true)
	if listenErr != nil {
		v.at(base, k("listen"), "listen = %q: %v", kn.Listen, listenErr)
	}
	if kn.DataDir == "" {
		v.at(base, k("data_dir"), "data_dir must not be empty")
	}
	// A public_url derived from a bad listen address is not a second problem.
	if err := checkURL(kn.PublicURL); err != nil && !(listenErr != nil && kn.PublicURL == defaultPublicURL(kn)) {
		v.at(base, k("public_url"), "public_url = %q: %v", shownURL(kn.PublicURL), err)
	}
	switch {
	case kn.TLSCertFile != "" && kn.TLSKeyFile == "":
		v.at(base, k("tls_cert_file"), "tls_cert_file is set but tls_key_file is not: set both to serve HTTPS, or neither")
	case kn.TLSCertFile == "" && kn.TLSKeyFile != "":
		v.at(base, k("tls_key_file"), "tls_key_file is set but tls_cert_file is not: set both to serve HTTPS, or neither")
	}
	if kn.AuthorityKey != "" {
		if _, err := keys.ParsePublicKey(kn.AuthorityKey); err != nil {
			v.at(base, k("authority_key"), "authority_key is not an acceptable Ed25519 public key: %v", err)
		}
	}
	if n := kn.MaxPendingApprovalsPerAgent; n < 0 {
		// 0 is accepted (the default), so "more than 0" would mislead.
		v.at(base, k("max_pending_approvals_per_agent"), "max_pending_approvals_per_agent must be 1 to %d, or 0 for the default of %d, not %d",
			MaxPendingApprovalsPerAgent, DefaultMaxPendingApprovalsPerAgent, n)
	} else if n != 0 {
		v.intRange(base, "max_pending_approvals_per_agent", n, 1, MaxPendingApprovalsPerAgent)
	}
}

func (v *validator) receipts() {
	r, base := v.p.Receipts, k("receipts")
	v.intRange(base, "checkpoint_every", r.CheckpointEvery, 1, MaxCheckpointEvery)
	v.intRange(base, "checkpoint_interval_seconds", r.CheckpointIntervalSeconds, 1, MaxCheckpointInterval)
}

// intRange checks lo ≤ n ≤ hi for the key name under base.
func (v *validator) intRange(base []string, name string, n, lo, hi int) {
	switch {
	case n < lo && lo == 1:
		v.at(base, k(name), "%s must be more than 0, not %d", name, n)
	case n < lo:
		v.at(base, k(name), "%s must be %d or more, not %d", name, lo, n)
	case n > hi:
		v.at(base, k(name), "%s = %d is more than the limit of %d", name, n, hi)
	}
}

const globMeta = `*?[\`

func (v *validator) grantList() {
	if n := len(v.p.Grants); n > MaxGrants {
		v.at(k("grants"), nil, "%d grants; the limit is %d", n, MaxGrants)
		return
	}
	ids := map[string]bool{}
	for i := range v.p.Grants {
		g, base := &v.p.Grants[i], k("grants", idx(i))
		switch {
		case g.ID == "":
			v.at(base, k("id"), "grant needs an id (capabilities name grants by id)")
		case checkID(g.ID) != nil:
			v.at(base, k("id"), "grant id %q: %v", g.ID, checkID(g.ID))
		case ids[g.ID]:
			v.at(base, k("id"), "grant id %q is already used by another grant", g.ID)
		}
		ids[g.ID] = true
		v.grantTarget(base, g)
		if len(g.Operations) == 0 {
			v.at(base, k("operations"), "operations must list at least one operation (the default is [\"invoke\"])")
		} else if len(g.Operations) > MaxOperations {
			v.at(base, k("operations"), "%d operations; the limit is %d", len(g.Operations), MaxOperations)
		}
		for j, op := range g.Operations {
			if err := checkID(op); err != nil {
				v.at(base, k("operations", idx(j)), "operation %q: %v", op, err)
			}
		}
		v.constraints(sub(base, "constraints"), g)
		if s := v.servers[g.Server]; s != nil && s.Transport == TransportBuiltin && (g.Tool == ToolConfirm || g.Tool == ToolAsk) && g.Approval == nil {
			v.at(base, k("tool"), "grant %q covers %q, which always asks a human: add [grants.approval] with approvers", g.ID, g.Tool)
		}
		if trigger := approvalTrigger(&g.Constraints); trigger != nil && g.Approval == nil {
			v.at(base, append(k("constraints"), trigger...),
				"grant %q asks for approval (%s) but has no [grants.approval] table: add one with at least one [[grants.approval.approvers]]",
				g.ID, strings.Join(trigger, "."))
		}
		if g.Approval != nil {
			if approvalTrigger(&g.Constraints) == nil && !v.coversHITL(g) {
				// The table reads as "these approvers decide", but nothing
				// would ever ask them: every call would run unasked.
				v.at(base, k("approval"), "grant %q has [grants.approval] but nothing asks for approval, so every call it covers would run "+
					"with no human asked: add a trigger to [grants.constraints] (require_approval_always = true, require_approval_above, "+
					"require_approval_first_n, require_approval_for_actions, require_approval_when, or on_trigger), or remove the table", g.ID)
			}
			v.approval(sub(base, "approval"), g)
		}
	}
}

// coversHITL reports whether grant g covers a builtin confirm or ask,
// which always asks a human: its approval table is used without a trigger.
func (v *validator) coversHITL(g *Grant) bool {
	s := v.servers[g.Server]
	if s == nil || s.Transport != TransportBuiltin || !validToolPattern(g.Tool) {
		return s == nil // an unknown server is reported already
	}
	return slices.ContainsFunc(coveredTools(s, g.Tool), func(t *Tool) bool {
		return t.Name == ToolConfirm || t.Name == ToolAsk || t.IsHITL()
	})
}

// grantTarget checks server and tool: the grant must be able to match
// something that exists.
func (v *validator) grantTarget(base []string, g *Grant) {
	s := v.servers[g.Server]
	switch {
	case g.Server == "":
		v.at(base, k("server"), "grant %q needs a server", g.ID)
	case s == nil:
		v.at(base, k("server"), "grant %q names server %q, which is not declared in [[servers]]", g.ID, g.Server)
	}
	switch {
	case g.Tool == "":
		v.at(base, k("tool"), "grant %q needs a tool (a name, or a pattern like \"*\" or \"read_*\")", g.ID)
	case len(g.Tool) > MaxPatternLen:
		v.at(base, k("tool"), "tool pattern is %d bytes; the limit is %d", len(g.Tool), MaxPatternLen)
	case !validToolPattern(g.Tool):
		v.at(base, k("tool"), "tool = %q is not a valid pattern (see Go's path.Match: *, ?, [a-z], \\ escapes)", g.Tool)
	case s != nil && !strings.ContainsAny(g.Tool, globMeta) && !declares(s, g.Tool):
		if s.Transport == TransportBuiltin {
			v.at(base, k("tool"), "server %q has no tool %q; builtin tools are %s", s.ID, g.Tool, builtinNames())
		} else {
			v.at(base, k("tool"), "server %q has no tool %q: declare it under [[servers.tools]]", s.ID, g.Tool)
		}
	}
}

func validToolPattern(p string) bool {
	_, err := path.Match(p, "")
	return err == nil && utf8.ValidString(p)
}

func declares(s *Server, tool string) bool {
	for i := range s.Tools {
		if s.Tools[i].Name == tool {
			return true
		}
	}
	// An MCP server's tools are discovered when chiod connects to it: a
	// grant may name one that [[servers.tools]] does not declare.
	return s.Transport == TransportMCP || s.Transport == TransportBuiltin && builtinTool(tool) != nil
}

func (v *validator) constraints(base []string, g *Grant) {
	c := &g.Constraints
	v.threshold(base, g)
	v.conditions(base, g)
	v.intRange(base, "require_approval_first_n", c.RequireApprovalFirstN, 0, MaxFirstN)
	v.intRange(base, "max_calls_per_minute", c.MaxCallsPerMinute, 0, MaxCallsPerMinute)
	v.actionCategories(base, g)
	v.pathPatterns(base, "forbidden_paths", c.ForbiddenPaths, MaxForbiddenPaths)
	v.pathPatterns(base, "allowed_paths", c.AllowedPaths, MaxAllowedPaths)
	if c.AllowedPaths != nil && len(c.AllowedPaths) == 0 {
		// Read literally, an empty allow-list allows no path; but an absent
		// one applies no check, and the two must not be confused.
		v.at(base, k("allowed_paths"), "allowed_paths = [] would allow no path at all: list the allowed patterns, or remove the key to apply no allow-list")
	}
	if c.ForbiddenPathsCaseInsensitive && len(c.ForbiddenPaths) == 0 {
		v.at(base, k("forbidden_paths_case_insensitive"), "forbidden_paths_case_insensitive = true, but there are no forbidden_paths to apply it to")
	}
	for _, guard := range slices.Sorted(maps.Keys(c.OnTrigger)) {
		p := k("on_trigger", guard)
		switch action := c.OnTrigger[guard]; {
		case strings.HasPrefix(guard, "require_approval"):
			v.at(base, p, "on_trigger.%s: %s already asks for approval; on_trigger routes only %s",
				guard, guard, strings.Join(routableGuards, ", "))
		case !slices.Contains(routableGuards, guard):
			v.at(base, p, "on_trigger names unknown guard %q; it can route %s", guard, strings.Join(routableGuards, ", "))
		case action != OnTriggerDeny && action != OnTriggerRequireApproval:
			v.at(base, p, "on_trigger.%s = %q: use \"deny\" or \"require_approval\"", guard, action)
		case action == OnTriggerRequireApproval && !guardSet(c, guard):
			// It would also count as the trigger that lets
			// [grants.approval] load: approvers nobody ever asks.
			v.at(base, p, "on_trigger.%s = \"require_approval\", but this grant does not set %s, so that guard never fires "+
				"and nobody is ever asked: set %s, or remove the route", guard, guard, guard)
		}
	}
}

// guardSet reports whether c sets the routable guard named guard, so that
// it can deny (and so be routed to a human).
func guardSet(c *Constraints, guard string) bool {
	switch guard {
	case "forbidden_paths":
		return len(c.ForbiddenPaths) > 0
	case "allowed_paths":
		return c.AllowedPaths != nil
	case "max_calls_per_minute":
		return c.MaxCallsPerMinute > 0
	case "governed_intent_required":
		return c.GovernedIntentRequired
	}
	return true
}

// actionCategories checks require_approval_for_actions. Categories match
// exactly, so a listed category that matches no category of the tools the
// grant covers, but is a near miss of one of them (it differs only by case,
// or by up to two edits: "finacial"), would never fire: refused, whether
// the grant names one tool or a pattern, and whichever side is misspelt.
// With no covered tool to compare, a near miss of a well-known category is
// refused the same way.
func (v *validator) actionCategories(base []string, g *Grant) {
	c := &g.Constraints
	if len(c.RequireApprovalForActions) > MaxActions {
		v.at(base, k("require_approval_for_actions"), "%d categories; the limit is %d", len(c.RequireApprovalForActions), MaxActions)
	}
	var tools []*Tool
	if s := v.servers[g.Server]; s != nil && g.Tool != "" && validToolPattern(g.Tool) {
		tools = coveredTools(s, g.Tool)
	}
	for j, a := range c.RequireApprovalForActions {
		at := k("require_approval_for_actions", idx(j))
		if err := checkID(a); err != nil {
			v.at(base, at, "category %q: %v", a, err)
			continue
		}
		tool := nearCategory(tools, a)
		switch {
		case tool != nil && strings.EqualFold(tool.Category, a):
			v.at(base, at, "category %q never matches tool %q, whose category is %q: "+
				"categories are case-sensitive; write %q", a, tool.Name, tool.Category, tool.Category)
		case tool != nil:
			v.at(base, at, "category %q never matches tool %q, whose category is %q: "+
				"categories match exactly; correct whichever is misspelt", a, tool.Name, tool.Category)
		case !hasCategory(tools, a) && !slices.Contains(Categories, a):
			if known := nearWellKnown(a); known != "" {
				v.at(base, at, "category %q is not a well-known category and no tool the grant covers has it: did you mean %q? "+
					"(categories match exactly)", a, known)
			}
		}
	}
}

// nearCategory returns the first tool whose category is a near miss of a
// (isNearMiss), when no tool's category equals a exactly; else nil.
func nearCategory(tools []*Tool, a string) *Tool {
	if hasCategory(tools, a) {
		return nil
	}
	for _, t := range tools {
		if t.Category != "" && isNearMiss(t.Category, a) {
			return t
		}
	}
	return nil
}

func hasCategory(tools []*Tool, a string) bool {
	return slices.ContainsFunc(tools, func(t *Tool) bool { return t.Category == a })
}

// nearWellKnown returns the well-known category a is a near miss of, or "".
func nearWellKnown(a string) string {
	for _, c := range Categories {
		if isNearMiss(c, a) {
			return c
		}
	}
	return ""
}

// isNearMiss reports whether two different category labels are probably
// one misspelt: equal but for case, or within two edits and fewer than
// half the shorter's length ("pay" is not a misspelling of "ops").
func isNearMiss(a, b string) bool {
	if a == b {
		return false
	}
	if strings.EqualFold(a, b) {
		return true
	}
	return editDistance(strings.ToLower(a), strings.ToLower(b)) < min(3, min(len(a), len(b))/2+1)
}

// pathPatterns checks forbidden_paths or allowed_paths: doublestar globs.
func (v *validator) pathPatterns(base []string, name string, pats []string, limit int) {
	if len(pats) > limit {
		v.at(base, k(name), "%d %s entries; the limit is %d", len(pats), name, limit)
		return
	}
	for j, p := range pats {
		switch {
		case p == "":
			v.at(base, k(name, idx(j)), "%s entries must not be empty", name)
		case len(p) > MaxPatternLen:
			v.at(base, k(name, idx(j)), "%s pattern is %d bytes; the limit is %d", name, len(p), MaxPatternLen)
		case !utf8.ValidString(p) || strings.IndexFunc(p, unicode.IsControl) >= 0:
			v.at(base, k(name, idx(j)), "%s entry %q must be valid UTF-8 without control characters", name, p)
		case !doublestar.ValidatePattern(p):
			v.at(base, k(name, idx(j)), "%s entry %q is not a valid pattern (like \"/etc/**\" or \"**/.ssh/**\")", name, p)
		case path.Clean(p) != p:
			// Arguments are matched in cleaned form (no trailing slash,
			// no "." or ".." or "//" segments): such an entry would
			// never match, a rule silently weaker than written.
			v.at(base, k(name, idx(j)), "%s entry %q is not in cleaned form, so no argument would match it; write %q", name, p, path.Clean(p))
		}
	}
}
