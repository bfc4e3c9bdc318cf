package policy

// Validation of [[servers]] and their [[servers.tools]].

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

func (v *validator) serverList() {
	if n := len(v.p.Servers); n > MaxServers {
		v.at(k("servers"), nil, "%d servers; the limit is %d", n, MaxServers)
		return
	}
	for i := range v.p.Servers {
		s, base := &v.p.Servers[i], k("servers", idx(i))
		switch {
		case s.ID == "":
			v.at(base, k("id"), "server needs an id")
		case checkID(s.ID) != nil:
			v.at(base, k("id"), "server id %q: %v", s.ID, checkID(s.ID))
		case v.servers[s.ID] != nil:
			v.at(base, k("id"), "server id %q is already used by another server", s.ID)
		default:
			v.servers[s.ID] = s
		}
		switch s.Transport {
		case TransportHTTP:
			if s.URL == "" {
				v.at(base, k("transport"), "server %q uses transport \"http\" and needs a url", s.ID)
			} else if err := checkURL(s.URL); err != nil {
				v.at(base, k("url"), "url = %q: %v", shownURL(s.URL), err)
			}
		case TransportBuiltin:
			if s.URL != "" {
				v.at(base, k("url"), "server %q is builtin (it runs inside chiod), so it takes no url", s.ID)
			}
		case TransportMCP:
			v.mcpServer(base, s)
		case "":
			v.at(base, k("transport"), "server %q needs a transport: \"http\", \"builtin\" or \"mcp\"", s.ID)
		default:
			v.at(base, k("transport"), "transport = %q is not supported: use \"http\", \"builtin\" or \"mcp\"", s.Transport)
		}
		if len(s.Command) > 0 && s.Transport != TransportMCP {
			v.at(base, k("command"), "command is for transport \"mcp\" (a stdio MCP server); server %q uses %q", s.ID, s.Transport)
		}
		v.intRange(base, "timeout_seconds", s.TimeoutSeconds, 1, MaxServerTimeoutSeconds)
		v.delivery(base, fmt.Sprintf("server %q", s.ID), s.Delivery, s.RetryDeadlineSeconds)
		v.tools(base, s)
	}
}

// mcpServer checks an MCP server: exactly one of command (stdio, started
// and supervised by chiod) and url (Streamable HTTP).
func (v *validator) mcpServer(base []string, s *Server) {
	switch {
	case len(s.Command) > 0 && s.URL != "":
		v.at(base, k("url"), "mcp server %q has both command and url: use command for stdio or url for Streamable HTTP", s.ID)
	case len(s.Command) == 0 && s.URL == "":
		v.at(base, k("transport"), "mcp server %q needs command = [\"program\", \"arg\", …] (stdio) or url (Streamable HTTP)", s.ID)
	case s.URL != "":
		if err := checkURL(s.URL); err != nil {
			v.at(base, k("url"), "url = %q: %v", shownURL(s.URL), err)
		}
	case len(s.Command) > MaxCommandArgs:
		v.at(base, k("command"), "command has %d elements; the limit is %d", len(s.Command), MaxCommandArgs)
	case strings.TrimSpace(s.Command[0]) == "":
		v.at(base, k("command"), "command[0] must name a program")
	}
	for j, a := range s.Command {
		if !utf8.ValidString(a) || strings.ContainsRune(a, 0) || len(a) > MaxPatternLen {
			v.at(base, k("command", idx(j)), "command[%d] must be valid UTF-8 without NUL, at most %d bytes", j, MaxPatternLen)
		}
	}
}

func (v *validator) tools(base []string, s *Server) {
	if n := len(s.Tools); n > MaxToolsPerServer {
		v.at(base, k("tools"), "server %q declares %d tools; the limit is %d", s.ID, n, MaxToolsPerServer)
		return
	}
	seen := map[string]bool{}
	for j := range s.Tools {
		t, tb := &s.Tools[j], k("tools", idx(j))
		switch {
		case t.Name == "":
			v.at(base, tb, "tool needs a name")
		case checkID(t.Name) != nil:
			v.at(base, append(tb, "name"), "tool name %q: %v", t.Name, checkID(t.Name))
		case strings.ContainsAny(t.Name, globMeta):
			v.at(base, append(tb, "name"), "tool name %q must not contain *, ?, [ or \\: grants use them as wildcards", t.Name)
		case seen[t.Name]:
			v.at(base, append(tb, "name"), "tool %q is declared twice on server %q", t.Name, s.ID)
		case s.Transport == TransportBuiltin && builtinTool(t.Name) == nil:
			v.at(base, append(tb, "name"), "builtin server %q has no tool %q; builtin tools are %s", s.ID, t.Name, builtinNames())
		}
		seen[t.Name] = true
		if t.Action == "" {
			v.at(base, append(tb, "action"), "action must not be empty (the default is \"invoke\")")
		} else if err := checkLabel(t.Action); err != nil {
			v.at(base, append(tb, "action"), "action %q: %v", t.Action, err)
		}
		if t.Category != "" {
			if err := checkID(t.Category); err != nil {
				v.at(base, append(tb, "category"), "category %q: %v", t.Category, err)
			}
		}
		v.toolAmount(sub(base, tb...), t)
		v.toolInputSchema(sub(base, tb...), s, t)
		v.delivery(sub(base, tb...), fmt.Sprintf("tool %q", t.Name), t.Delivery, t.RetryDeadlineSeconds)
	}
}
