package mcpgw

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// Path is where chiod serves the gateway.
const Path = "/mcp"

// Options wires a Gateway. Kernel and Catalog are required.
type Options struct {
	Kernel *kernel.Kernel
	// Catalog is the upstream MCP servers' tools (internal/dispatch's
	// Router.MCP()).
	Catalog *mcp.Set
	// PendingWait is how long a parked call is held open by default;
	// 0 = DefaultPendingWait.
	PendingWait time.Duration
	// ProgressEvery spaces progress notifications; 0 = DefaultProgressEvery.
	ProgressEvery time.Duration
	// BodyReadTimeout bounds how long reading one POST body may take;
	// 0 = httpapi.BodyReadTimeout, the API's own bound.
	BodyReadTimeout time.Duration
	// WriteTimeout bounds each write of an /mcp response (httpapi.DeadlineWriter);
	// 0 = httpapi.StreamWriteTimeout, the API's bound on an SSE frame.
	WriteTimeout time.Duration
	// MaxSessionsPerAgent bounds one agent's open MCP sessions;
	// 0 = DefaultMaxSessionsPerAgent.
	MaxSessionsPerAgent int
	// MaxSessions bounds all agents' open MCP sessions together;
	// 0 = DefaultMaxSessions.
	MaxSessions int
	// SessionIdle closes an MCP session with no requests for this long;
	// 0 = SessionIdle.
	SessionIdle time.Duration
	Log         *slog.Logger
}

// Gateway serves MCP to agents. It keeps one MCP server per agent (subject
// key and capability), whose tools are exactly what that capability grants.
type Gateway struct {
	o        Options
	handler  http.Handler
	mcp      *mcpsdk.StreamableHTTPHandler
	mu       sync.Mutex
	agents   map[string]*agentServer
	waits    waitLimit
	sessions *sessionLimit
	// sessionWaits ends a session's waits when it is DELETEd.
	sessionWaits sessionWaits
	// verified caches session tokens by the SHA-256 of the bearer: a
	// client sends the same one with every request, and checking it costs
	// two signature verifications. Expiry is re-checked on every hit.
	verified *lru.Cache[[32]byte, *agent]
	// syncing is set (under mu) while a goroutine re-offers every agent's
	// tools (ToolsChanged); resync asks it for one more pass.
	syncing, resync bool
	// closing is closed when chiod shuts down (CloseSessions); posting
	// counts the POSTs being served until then.
	closing   chan struct{}
	closeOnce sync.Once
	posting   sync.WaitGroup
}

// New builds the gateway.
func New(o Options) (*Gateway, error) {
	if o.Kernel == nil || o.Catalog == nil {
		return nil, errors.New("mcpgw: Kernel and Catalog are required")
	}
	if o.PendingWait <= 0 {
		o.PendingWait = DefaultPendingWait
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = httpapi.BodyReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = httpapi.StreamWriteTimeout
	}
	if o.MaxSessionsPerAgent <= 0 {
		o.MaxSessionsPerAgent = DefaultMaxSessionsPerAgent
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = SessionIdle
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	verified, _ := lru.New[[32]byte, *agent](sessionCacheSize)
	g := &Gateway{o: o, agents: map[string]*agentServer{}, verified: verified,
		sessions: newSessionLimit(o.MaxSessionsPerAgent, o.MaxSessions), closing: make(chan struct{})}
	g.mcp = mcpsdk.NewStreamableHTTPHandler(g.serverFor, &mcpsdk.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxRequestBytes,
		SessionTimeout:      o.SessionIdle,
		Logger:              o.Log,
		// The SDK's DNS-rebinding guard refuses a non-localhost Host on a
		// loopback connection: it protects unauthenticated local servers,
		// and would refuse chiod behind a reverse proxy. Here every request
		// needs a bearer signed by an agent key, which a rebinding page
		// cannot make.
		DisableLocalhostProtection: true,
	})
	// The bearer is checked first: an anonymous client is answered 401
	// before a byte of its body is read, so it cannot hold a goroutine,
	// a connection and a buffer by announcing a body it never sends.
	authed := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// A POST is counted while it is served (CloseSessions waits for
		// them); none is counted once chiod is shutting down.
		if r.Method == http.MethodPost && g.countPost() {
			defer g.posting.Done()
		}
		// Each write of the answer (an SSE stream, the SDK's default) is
		// bounded and the deadline cleared after it (httpapi.DeadlineWriter).
		w := httpapi.NewDeadlineWriter(rw, g.o.WriteTimeout)
		defer w.Finish()
		if err := withRawIntent(w, r, g.o.BodyReadTimeout); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // nothing was served for it
			return
		}
		if refuseAmbiguousID(w, r) {
			return // ids the SDK would answer as another request's
		}
		if opensSession(r) {
			g.openSession(w, r) // within the session limits (sessions.go)
			return
		}
		if r.Method == http.MethodDelete {
			// The SDK's close waits for the session's requests: its waits
			// end first (sessionwaits.go). Only this agent's own.
			// A wait that starts while the DELETE is served ends at once.
			if a, ok := agentOf(auth.TokenInfoFromContext(r.Context())); ok && r.Header.Get(sessionIDHeader) != "" {
				key := sessionWaitKey(a.id(), r.Header.Get(sessionIDHeader))
				g.sessionWaits.end(key)
				defer g.sessionWaits.forget(key)
			}
		}
		g.mcp.ServeHTTP(w, r)
	})
	g.handler = auth.RequireBearerToken(g.verify, &auth.RequireBearerTokenOptions{})(authed)
	return g, nil
}

// CloseSessions ends every wait on a parked call, now and from now on,
// then closes every MCP session, so a graceful shutdown is not held open
// by clients that asked to wait for a human or keep a stream open for
// notifications (wire it with http.Server.RegisterOnShutdown, as the API's
// CloseStreams). Each wait is answered the call's state as it is — a
// parked call pending_approval, fetched later with chio_await — before
// its session closes: a session's Close waits for its requests to return.
func (g *Gateway) CloseSessions() {
	g.mu.Lock()
	g.closeOnce.Do(func() { close(g.closing) })
	g.mu.Unlock()
	// The POSTs being served return once their waits end and their
	// answers are written; only then are the sessions (and with them
	// their GET streams) closed: a session closed under a POST whose
	// answer was still on its way lost that answer (the client's call
	// ended "terminated without response").
	g.posting.Wait()
	g.mu.Lock()
	var sessions []*mcpsdk.ServerSession
	for _, as := range g.agents {
		for ss := range as.srv.Sessions() {
			sessions = append(sessions, ss)
		}
	}
	g.mu.Unlock()
	for _, ss := range sessions {
		_ = ss.Close()
	}
}

// countPost counts a POST being served unless chiod is shutting down,
// and says whether it did. Under mu with CloseSessions' close of closing,
// so no POST is counted after its Wait began.
func (g *Gateway) countPost() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.closing:
		return false
	default:
		g.posting.Add(1)
		return true
	}
}

// ServeHTTP serves /mcp.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.handler.ServeHTTP(w, r)
}

// ToolsChanged re-offers a server's tools to every connected agent (wire
// it to the catalogue's OnToolsChanged). It does not block. One goroutine
// does it; changes that arrive while it runs make it run one more pass,
// which starts after them: an upstream that keeps changing its list, or
// reloads in a row, cannot pile up goroutines behind a slow sync.
func (g *Gateway) ToolsChanged(string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.syncing {
		g.resync = true
		return
	}
	g.syncing = true
	go g.syncAgents()
}

// syncAgents syncs every agent's tools until no change came during a pass.
func (g *Gateway) syncAgents() {
	for {
		g.mu.Lock()
		g.resync = false
		list := make([]*agentServer, 0, len(g.agents))
		for _, a := range g.agents {
			list = append(list, a)
		}
		g.mu.Unlock()
		for _, a := range list {
			a.sync()
		}
		g.mu.Lock()
		if !g.resync {
			g.syncing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// trusted are the keys whose capabilities the kernel accepts.
func (g *Gateway) trusted() []keys.PublicKey {
	out := []keys.PublicKey{g.o.Kernel.PublicKey()}
	if ak := g.o.Kernel.Policy().Kernel.AuthorityKey; ak != "" {
		if k, err := keys.ParsePublicKey(ak); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// verify is the bearer check for every /mcp request.
func (g *Gateway) verify(_ context.Context, bearer string, _ *http.Request) (*auth.TokenInfo, error) {
	k := g.o.Kernel
	now := k.Clock().Now()
	h := sha256.Sum256([]byte(bearer))
	a, ok := g.verified.Get(h)
	if !ok || !now.Before(a.expires) || a.cap.CheckTime(now) != nil {
		var err error
		if a, err = verifySession(bearer, k.PublicKey(), g.trusted(), now); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		g.verified.Add(h, a)
	}
	revoked, err := g.revoked(a.cap.ID)
	if err != nil {
		// The SDK answers this error's text as is: the store's own words
		// (a PostgreSQL error names the host, user and database) go to
		// the log, the client is told only that the store is unavailable,
		// as chiod's API tells it (internal/httpapi/storeerr.go).
		g.o.Log.Warn("mcp session refused: cannot read whether its capability is revoked", "err", err.Error())
		return nil, errSessionStoreDown
	}
	if revoked {
		return nil, fmt.Errorf("%w: capability %s is revoked", auth.ErrInvalidToken, a.cap.ID)
	}
	return &auth.TokenInfo{UserID: a.id(), Expiration: a.expires, Extra: map[string]any{agentKey: a}}, nil
}

const agentKey = "chio.agent"

// errSessionStoreDown is the answer to a session bearer whose revocation
// could not be read.
var errSessionStoreDown = errors.New(kernel.ErrUnavailable.Error() + "; try again later (chiod's log has the cause)")

func (g *Gateway) revoked(capID string) (bool, error) {
	var revoked bool
	err := g.o.Kernel.Store().View(func(tx kernel.ReadTx) error {
		var err error
		revoked, err = tx.Revoked(capID)
		return err
	})
	return revoked, err
}

// agentOf reads the verified agent from a request's token info.
func agentOf(ti *auth.TokenInfo) (*agent, bool) {
	if ti == nil {
		return nil, false
	}
	a, ok := ti.Extra[agentKey].(*agent)
	return a, ok
}

// serverFor returns the agent's MCP server, creating it on its first session.
func (g *Gateway) serverFor(r *http.Request) *mcpsdk.Server {
	a, ok := agentOf(auth.TokenInfoFromContext(r.Context()))
	if !ok {
		return nil // cannot happen behind RequireBearerToken; the SDK answers 400
	}
	g.mu.Lock()
	as := g.agents[a.id()]
	if as == nil {
		if len(g.agents) >= MaxAgents {
			g.pruneLocked()
		}
		as = newAgentServer(g, a)
		g.agents[a.id()] = as
	}
	g.mu.Unlock()
	as.sync()
	return as.srv
}

// pruneLocked forgets agents with no open session, and none being opened.
func (g *Gateway) pruneLocked() {
	for id, a := range g.agents {
		open := g.sessions.count(id) > 0
		for range a.srv.Sessions() {
			open = true
			break
		}
		if !open {
			delete(g.agents, id)
		}
	}
}

// waitLimit counts concurrent waits per agent.
type waitLimit struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *waitLimit) acquire(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	if w.n[id] >= MaxWaitsPerAgent {
		return false
	}
	w.n[id]++
	return true
}

func (w *waitLimit) release(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[id]--; w.n[id] <= 0 {
		delete(w.n, id)
	}
}
