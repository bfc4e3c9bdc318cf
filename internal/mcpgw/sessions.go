package mcpgw

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every MCP session holds goroutines and buffers until it ends, which may
// be SessionIdle after its last request, and opening one costs an agent
// only a POST. So live sessions are bounded per agent and in all. At its
// cap an agent's new session is refused (429), never made room for by
// closing an older one: an older session may be waiting for an approval
// or running a tool, and refusing changes nothing that exists.
//
// The one way to open a session is a POST with no Mcp-Session-Id (the SDK
// runs stateful, StreamableHTTPOptions.Stateless unset); every other
// request names a session the SDK already holds.

// sessionIDHeader is the MCP header naming a request's session.
const sessionIDHeader = "Mcp-Session-Id"

// codeSessionLimit is the JSON-RPC error code (the implementation-defined
// server error range) of a refused session.
const codeSessionLimit = -32000

var (
	// errAgentSessions: the agent holds its most sessions.
	errAgentSessions = errors.New("agent session limit")
	// errAllSessions: chiod holds its most sessions.
	errAllSessions = errors.New("gateway session limit")
)

// sessionLimit counts each agent's live MCP sessions and all of them. An
// agent's count is its sessions being opened (a reservation, held while the
// opening request is served) plus the sessions the SDK holds for it, each
// watched until it ends, whatever ends it: DELETE, the idle timeout, the
// gateway. A count may briefly exceed the truth, never fall below it.
type sessionLimit struct {
	perAgent, all int // the caps

	mu      sync.Mutex
	n       map[string]int // agent id → reservations + watched sessions
	total   int
	watched map[*mcpsdk.ServerSession]bool
}

func newSessionLimit(perAgent, all int) *sessionLimit {
	return &sessionLimit{perAgent: perAgent, all: all, n: map[string]int{}, watched: map[*mcpsdk.ServerSession]bool{}}
}

// reserve takes a place for a session agent id is opening.
func (l *sessionLimit) reserve(id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.n[id] >= l.perAgent:
		return errAgentSessions
	case l.total >= l.all:
		return errAllSessions
	}
	l.n[id]++
	l.total++
	return nil
}

// settle ends a reservation once its opening request is served: every
// session of the agent's server that is not yet watched is watched from
// now on, and counted. The first takes the reservation's place; any other
// was opened by a concurrent request, which will find nothing left to
// watch and give its own reservation back. With none, the opening request
// made no session that outlived it, and the reservation is given back.
func (l *sessionLimit) settle(id string, srv *mcpsdk.Server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reserved := true
	if srv != nil {
		for ss := range srv.Sessions() {
			if l.watched[ss] {
				continue
			}
			l.watched[ss] = true
			if reserved {
				reserved = false
			} else {
				l.n[id]++
				l.total++
			}
			go l.watch(id, ss)
		}
	}
	if reserved {
		l.releaseLocked(id)
	}
}

// watch gives a session's place back when it ends. ServerSession.Wait
// returns once the session's connection is done, however it was closed,
// after the SDK has removed it from Server.Sessions (so it is never seen,
// and counted, again).
func (l *sessionLimit) watch(id string, ss *mcpsdk.ServerSession) {
	_ = ss.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.watched, ss)
	l.releaseLocked(id)
}

func (l *sessionLimit) releaseLocked(id string) {
	l.total--
	if l.n[id]--; l.n[id] <= 0 {
		delete(l.n, id)
	}
}

// count is agent id's reservations and live sessions.
func (l *sessionLimit) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[id]
}

// opensSession reports whether the SDK would open a session for r.
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get(sessionIDHeader) == ""
}

// openSession serves a request that opens a session, within the limits.
func (g *Gateway) openSession(w http.ResponseWriter, r *http.Request) {
	a, ok := agentOf(auth.TokenInfoFromContext(r.Context()))
	if !ok { // cannot happen behind RequireBearerToken
		http.Error(w, "no verified session token", http.StatusUnauthorized)
		return
	}
	id := a.id()
	switch err := g.sessions.reserve(id); {
	case errors.Is(err, errAgentSessions):
		refuseSession(w, http.StatusTooManyRequests, fmt.Sprintf("this agent already holds %d open MCP sessions, "+
			"the most one agent may: reuse one, or end one (DELETE %s with its %s header); "+
			"a session with no requests for %s is closed", g.o.MaxSessionsPerAgent, Path, sessionIDHeader, g.o.SessionIdle))
		return
	case err != nil:
		refuseSession(w, http.StatusServiceUnavailable, fmt.Sprintf("chiod holds %d open MCP sessions, "+
			"the most it serves at once: retry later", g.o.MaxSessions))
		return
	}
	// Deferred, so that a handler that panics (http.ErrAbortHandler) does
	// not keep the reservation for ever.
	defer func() {
		// The reservation keeps the agent's server from being pruned, so
		// this is the server the SDK opened the session on (nil if it
		// never asked).
		g.mu.Lock()
		var srv *mcpsdk.Server
		if as := g.agents[id]; as != nil {
			srv = as.srv
		}
		g.mu.Unlock()
		g.sessions.settle(id, srv)
	}()
	g.mcp.ServeHTTP(w, r)
}

// sessionRefusal is the body of a refused session: a JSON-RPC error whose
// id is null (JSON-RPC 2.0 §5), since the body is not read to find it.
type sessionRefusal struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      *struct{}      `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// refuseSession answers a refused session, saying why and when to try
// again (Retry-After, as chiod's other 429s and 503s).
func refuseSession(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(SessionRetryAfter/time.Second)))
	data, err := json.Marshal(sessionRefusal{JSONRPC: "2.0", Error: &jsonrpc.Error{Code: codeSessionLimit, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
