package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Router implements kernel.Dispatcher over the servers of a policy. It is
// safe for concurrent use.
type Router struct {
	servers   map[string]route
	client    *http.Client
	ownClient bool     // Close only tears down a client we built
	builtin   *builtin // nil when no server uses the builtin transport
	mcp       *mcp.Set // the "mcp" servers (empty when none)
	closed    atomic.Bool
	// signCall, when set, signs calls to http servers (WithCallSigner).
	signCall func(msg []byte) []byte
	now      func() time.Time
}

var _ kernel.Dispatcher = (*Router)(nil)

// ErrClosed is returned by Dispatch after Close.
var ErrClosed = errors.New("dispatch: router closed")

// route is one server's resolved transport settings.
type route struct {
	id        string
	transport string
	url       string
	timeout   time.Duration
}

// Option adjusts a Router at construction.
type Option func(*config)

type config struct {
	client         *http.Client
	defaultTimeout time.Duration
	mcp            mcp.Options
	signCall       func(msg []byte) []byte
	now            func() time.Time
}

// WithMCP sets how upstream MCP servers are supervised (logging, backoff,
// the tools-changed callback the gateway listens on).
func WithMCP(o mcp.Options) Option { return func(cf *config) { cf.mcp = o } }

// WithCallSigner signs every call sent to an http server with the kernel
// key (internal/signed/toolcall.go): sign gets the whole signed message
// (domain included) and returns the Ed25519 signature; now is the
// kernel's clock, for X-Chio-Sent-At.
func WithCallSigner(sign func(msg []byte) []byte, now func() time.Time) Option {
	return func(cf *config) { cf.signCall, cf.now = sign, now }
}

// WithHTTPClient makes the Router use c for the http transport instead of
// its own pooled client. The caller keeps ownership: Close leaves c alone.
func WithHTTPClient(c *http.Client) Option { return func(cf *config) { cf.client = c } }

// WithDefaultTimeout replaces DefaultTimeout for servers without
// timeout_seconds (tests use it to stay fast; whole seconds are too coarse).
func WithDefaultTimeout(d time.Duration) Option {
	return func(cf *config) { cf.defaultTimeout = d }
}

// New builds a Router for servers. dataDir holds builtin tool state and is
// only touched when some server uses the builtin transport. The policy
// loader validates servers too; New re-checks what it relies on so that a
// Router never exists with a route it cannot serve.
func New(servers []policy.Server, dataDir string, opts ...Option) (*Router, error) {
	cf := config{defaultTimeout: DefaultTimeout}
	for _, o := range opts {
		o(&cf)
	}
	if cf.defaultTimeout <= 0 {
		return nil, errors.New("dispatch: default timeout must be > 0")
	}
	r := &Router{servers: make(map[string]route, len(servers)), client: cf.client, signCall: cf.signCall, now: cf.now}
	if r.signCall != nil && r.now == nil {
		r.now = time.Now
	}
	needBuiltin := false
	for _, s := range servers {
		if s.ID == "" {
			return nil, errors.New("dispatch: server with empty id")
		}
		if _, dup := r.servers[s.ID]; dup {
			return nil, fmt.Errorf("dispatch: duplicate server id %q", s.ID)
		}
		if s.TimeoutSeconds < 0 {
			return nil, fmt.Errorf("dispatch: server %q: negative timeout_seconds", s.ID)
		}
		rt := route{id: s.ID, transport: s.Transport, url: s.URL, timeout: cf.defaultTimeout}
		if s.TimeoutSeconds > 0 {
			rt.timeout = time.Duration(s.TimeoutSeconds) * time.Second
		}
		switch s.Transport {
		case "http":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("dispatch: server %q: url %q is not an absolute http(s) URL", s.ID, s.URL)
			}
		case "builtin":
			needBuiltin = true
		case policy.TransportMCP:
			// Supervised by r.mcp (started below); the policy loader has
			// checked command / url.
		default:
			return nil, fmt.Errorf("dispatch: server %q: unknown transport %q", s.ID, s.Transport)
		}
		r.servers[s.ID] = rt
	}
	if r.client == nil {
		r.client, r.ownClient = newHTTPClient(), true
	}
	if cf.mcp.CallTimeout <= 0 {
		cf.mcp.CallTimeout = cf.defaultTimeout
	}
	set, err := mcp.NewSet(servers, cf.mcp)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	r.mcp = set
	if needBuiltin {
		if dataDir == "" {
			return nil, errors.New("dispatch: builtin transport needs a data dir")
		}
		b, err := openBuiltin(dataDir)
		if err != nil {
			r.mcp.Close()
			return nil, err
		}
		r.builtin = b
	}
	return r, nil
}

// Dispatch delivers req to the server it names.
func (r *Router) Dispatch(ctx context.Context, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	if r.closed.Load() {
		return kernel.DispatchResult{}, ErrClosed
	}
	rt, ok := r.servers[req.Server]
	if !ok {
		return kernel.DispatchResult{}, fmt.Errorf("dispatch: %w: %q", kernel.ErrUnknownServer, req.Server)
	}
	// The request id is the idempotency key on both transports; without it
	// a retry could perform the effect twice, so refuse rather than guess.
	if req.RequestID == "" {
		return kernel.DispatchResult{}, errors.New("dispatch: empty request id")
	}
	var (
		res kernel.DispatchResult
		err error
	)
	switch rt.transport {
	case "http":
		res, err = r.dispatchHTTP(ctx, rt, req)
	case policy.TransportMCP:
		res, err = r.mcp.Dispatch(ctx, req)
	default: // "builtin": New admits nothing else
		res, err = r.builtin.dispatch(ctx, req)
	}
	if err != nil {
		return kernel.DispatchResult{}, fmt.Errorf("dispatch %s/%s: %w", req.Server, req.Tool, err)
	}
	return res, nil
}

// MCP is the set of upstream MCP servers: their tool catalogue and the
// schema validator the kernel's guard uses.
func (r *Router) MCP() *mcp.Set { return r.mcp }

// Close releases idle connections and stops the MCP servers. It is
// idempotent; Dispatch fails after it.
func (r *Router) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.mcp.Close()
	if r.ownClient {
		r.client.CloseIdleConnections()
	}
	return nil
}
