package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// Index holds the lookups the kernel makes on every call. Parse builds it
// once; it is read-only afterwards and shared by concurrent callers.
type Index struct {
	servers map[string]*Server
	tools   map[serverTool]*Tool
	// foldedTools holds the same tools under (server, caseKey(name)): a
	// call naming a tool in another letter case is found by it
	// (ToolInOtherCase).
	foldedTools map[serverTool]*Tool
	grants      map[string]*Grant
	// Grants by exact (server, tool), and pattern grants by (server, the
	// literal prefix before the pattern's first metacharacter), each list in
	// file order: a call looks only at lists whose prefix starts its tool
	// name, never at every grant. globLens holds, per server, the distinct
	// prefix lengths in use, so a lookup costs one map probe per length.
	exact    map[serverTool][]int32
	globs    map[serverTool][]int32
	globLens map[string][]int
}

type serverTool struct{ server, tool string }

// builtinTools are the demo tools a "builtin" server provides (run by
// internal/dispatch); a builtin server may use them without declaring them.
func builtinTools() []Tool {
	return []Tool{
		{Name: "echo", Action: DefaultAction},
		// Its arguments are {"customer_id", "amount" (minor units), "currency"}.
		{Name: "issue_refund", Action: "charge", Category: "financial", Amount: "/amount", Currency: "/currency"},
		// confirm and ask are not tools that run: they ask a human (kind
		// confirm / question) and the signed answer is the call's output.
		{Name: ToolConfirm, Action: "confirm", Category: CategoryHITL},
		{Name: ToolAsk, Action: "ask", Category: CategoryHITL},
		{Name: "delete_file", Action: "delete", Category: "data_mutation"},
	}
}

// The human-in-the-loop verbs every builtin server offers.
const (
	ToolConfirm  = "confirm"
	ToolAsk      = "ask"
	CategoryHITL = "hitl"
)

// IsHITL reports whether t is a confirm/ask verb rather than a tool.
func (t *Tool) IsHITL() bool { return t != nil && t.Category == CategoryHITL }

func builtinTool(name string) *Tool {
	for _, t := range builtinTools() {
		if t.Name == name {
			return &t
		}
	}
	return nil
}

// coveredTools returns the tools of s that a grant's tool pattern (or
// exact name) matches as Policy.Match does: the declared ones and, on a
// builtin server, the builtin tools it does not redeclare (Policy.Tool's
// view).
func coveredTools(s *Server, pattern string) []*Tool {
	var out []*Tool
	for i := range s.Tools {
		if ok, _ := path.Match(pattern, s.Tools[i].Name); ok {
			out = append(out, &s.Tools[i])
		}
	}
	if s.Transport != TransportBuiltin {
		return out
	}
	for _, t := range builtinTools() {
		redeclared := slices.ContainsFunc(s.Tools, func(d Tool) bool { return d.Name == t.Name })
		if ok, _ := path.Match(pattern, t.Name); ok && !redeclared {
			out = append(out, &t)
		}
	}
	return out
}

func builtinNames() string {
	var names []string
	for _, t := range builtinTools() {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

func buildIndex(p *Policy) *Index {
	ix := &Index{
		servers:     make(map[string]*Server, len(p.Servers)),
		tools:       map[serverTool]*Tool{},
		foldedTools: map[serverTool]*Tool{},
		grants:      make(map[string]*Grant, len(p.Grants)),
		exact:       map[serverTool][]int32{},
		globs:       map[serverTool][]int32{},
		globLens:    map[string][]int{},
	}
	for i := range p.Servers {
		s := &p.Servers[i]
		ix.servers[s.ID] = s
		for j := range s.Tools {
			ix.tools[serverTool{s.ID, s.Tools[j].Name}] = &s.Tools[j]
		}
		if s.Transport == TransportBuiltin {
			for _, t := range builtinTools() {
				if key := (serverTool{s.ID, t.Name}); ix.tools[key] == nil {
					ix.tools[key] = &t
				}
			}
		}
	}
	for key, t := range ix.tools {
		ix.foldedTools[serverTool{key.server, caseKey(key.tool)}] = t
	}
	for i := range p.Grants {
		g := &p.Grants[i]
		ix.grants[g.ID] = g
		if cut := strings.IndexAny(g.Tool, globMeta); cut >= 0 {
			key := serverTool{g.Server, g.Tool[:cut]}
			ix.globs[key] = append(ix.globs[key], int32(i))
			if !slices.Contains(ix.globLens[g.Server], cut) {
				ix.globLens[g.Server] = append(ix.globLens[g.Server], cut)
			}
		} else {
			key := serverTool{g.Server, g.Tool}
			ix.exact[key] = append(ix.exact[key], int32(i))
		}
	}
	return ix
}

// Server returns the server with this id.
func (p *Policy) Server(id string) (*Server, bool) {
	if p.index == nil {
		return nil, false
	}
	s, ok := p.index.servers[id]
	return s, ok
}

// Tool returns a tool of a server: a declared one, or for a builtin server an
// undeclared builtin tool with its standard action and category.
func (p *Policy) Tool(server, tool string) (*Tool, bool) {
	if p.index == nil {
		return nil, false
	}
	t, ok := p.index.tools[serverTool{server, tool}]
	return t, ok
}

// ToolInOtherCase returns the tool of server whose name equals tool in
// another letter case (caseKey: under Unicode case folding, or once
// lower- or upper-cased) but is spelled otherwise, when server has no tool
// spelled exactly so. Grants match tool names exactly, but a tool server
// may not: one that reads "Issue_Refund" (or, lower-casing in Go,
// "İssue_refund") as issue_refund would run the declared tool under
// whichever grant matched the other spelling (a catch-all "*"), skipping
// the declared tool's own grant. (Two declared tools that differ only in
// case are each found exactly.)
func (p *Policy) ToolInOtherCase(server, tool string) (*Tool, bool) {
	if p.index == nil {
		return nil, false
	}
	if _, exact := p.index.tools[serverTool{server, tool}]; exact {
		return nil, false
	}
	t, ok := p.index.foldedTools[serverTool{server, caseKey(tool)}]
	return t, ok
}

// caseKey maps a tool name to a key shared by the names a tool server
// comparing names case-insensitively may take for one another: each rune
// is lower-cased, then upper-cased, then folded (canon.FoldKey). Folding
// alone (strings.EqualFold) keeps "İ" (U+0130) and "ı" (U+0131) apart
// from i, yet Go's ToLower maps İ to i, and ToUpper (Go, Python,
// JavaScript) maps ı to I.
func caseKey(name string) string {
	return canon.FoldKey(strings.ToUpper(strings.ToLower(name)))
}

// Tools returns the tools the policy knows on server: the declared ones in
// file order, then, on a builtin server, the builtin tools it does not
// redeclare (Tool's view of each). An MCP server's other tools are
// discovered by chiod, not known to the policy.
func (p *Policy) Tools(server string) []*Tool {
	s, ok := p.Server(server)
	if !ok {
		return nil
	}
	out := make([]*Tool, 0, len(s.Tools))
	for i := range s.Tools {
		out = append(out, p.index.tools[serverTool{server, s.Tools[i].Name}])
	}
	if s.Transport == TransportBuiltin {
		for _, t := range builtinTools() {
			if !slices.ContainsFunc(s.Tools, func(d Tool) bool { return d.Name == t.Name }) {
				out = append(out, p.index.tools[serverTool{server, t.Name}])
			}
		}
	}
	return out
}

// Grant returns the grant with this id.
func (p *Policy) Grant(id string) (*Grant, bool) {
	if p.index == nil {
		return nil, false
	}
	g, ok := p.index.grants[id]
	return g, ok
}

// Match returns the first grant, in file order, that the caller holds
// (has(grant.ID), typically the capability's grant set), that names server,
// whose tool pattern matches tool (path.Match: "*" does not cross "/"), and
// that lists operation. First match wins, so order grants from specific to
// general. has must not be nil.
func (p *Policy) Match(has func(grantID string) bool, server, tool, operation string) (*Grant, bool) {
	if p.index == nil {
		return nil, false
	}
	// The answer is the smallest file position among each candidate list's
	// first usable grant; lists are in file order, so each scan stops early.
	best := int32(-1)
	consider := func(list []int32, pattern bool) {
		for _, i := range list {
			if best >= 0 && i >= best {
				return
			}
			g := &p.Grants[i]
			if pattern {
				if ok, _ := path.Match(g.Tool, tool); !ok {
					continue
				}
			}
			if slices.Contains(g.Operations, operation) && has(g.ID) {
				best = i
				return
			}
		}
	}
	consider(p.index.exact[serverTool{server, tool}], false)
	for _, n := range p.index.globLens[server] {
		if n <= len(tool) {
			consider(p.index.globs[serverTool{server, tool[:n]}], true)
		}
	}
	if best < 0 {
		return nil, false
	}
	return &p.Grants[best], true
}

// ApproverByKey returns the approver with this public key.
func (a *Approval) ApproverByKey(k keys.PublicKey) (*Approver, bool) {
	for i := range a.Approvers {
		if a.Approvers[i].PublicKey.Equal(k) {
			return &a.Approvers[i], true
		}
	}
	return nil, false
}

// ApproverByName returns the approver with this display_name.
func (a *Approval) ApproverByName(name string) (*Approver, bool) {
	for i := range a.Approvers {
		if a.Approvers[i].DisplayName == name {
			return &a.Approvers[i], true
		}
	}
	return nil, false
}
