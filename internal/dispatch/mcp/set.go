package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Set is every MCP server of a policy, each supervised on its own. It
// implements kernel.Dispatcher for those servers and is the tool catalogue
// the gateway (internal/mcpgw) and SchemaGuard read.
type Set struct {
	ups map[string]*Upstream
}

var _ kernel.Dispatcher = (*Set)(nil)

// NewSet starts supervising every server with transport "mcp" in servers
// (others are ignored). Start-up never blocks on a server: one that is
// down is retried in the background and its calls are NotDelivered.
func NewSet(servers []policy.Server, o Options) (*Set, error) {
	o.defaults()
	base := o.HTTPTransport
	if base == nil {
		base = newHTTPTransport()
	}
	s := &Set{ups: map[string]*Upstream{}}
	for _, srv := range servers {
		if srv.Transport != policy.TransportMCP {
			continue
		}
		if s.ups[srv.ID] != nil {
			s.Close()
			return nil, fmt.Errorf("mcp: duplicate server id %q", srv.ID)
		}
		u, err := newUpstream(srv, o, base)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.ups[srv.ID] = u
	}
	return s, nil
}

// Upstream returns one server.
func (s *Set) Upstream(id string) (*Upstream, bool) {
	u, ok := s.ups[id]
	return u, ok
}

// Servers lists the server ids, sorted.
func (s *Set) Servers() []string {
	ids := make([]string, 0, len(s.ups))
	for id := range s.ups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Tool returns a listed tool of a server.
func (s *Set) Tool(server, name string) (*Tool, bool) {
	u, ok := s.ups[server]
	if !ok {
		return nil, false
	}
	return u.Tool(name)
}

// ErrNotMCP is returned for a server id that is not an MCP server here.
var ErrNotMCP = errors.New("not an mcp server")

// Dispatch routes req to its server.
func (s *Set) Dispatch(ctx context.Context, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	u, ok := s.ups[req.Server]
	if !ok {
		return kernel.DispatchResult{}, fmt.Errorf("%w: %w: %q", kernel.ErrUnknownServer, ErrNotMCP, req.Server)
	}
	return u.Dispatch(ctx, req)
}

// Close stops every server (in parallel: each may take killGrace).
func (s *Set) Close() {
	done := make(chan struct{}, len(s.ups))
	for _, u := range s.ups {
		go func() { u.close(); done <- struct{}{} }()
	}
	for range s.ups {
		<-done
	}
}
