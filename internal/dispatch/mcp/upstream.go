package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/policy"
)

// Options tunes every upstream of a Set. Zero values pick the defaults in
// limits.go.
type Options struct {
	// Log receives connection, restart and skipped-tool events; nil
	// discards them.
	Log *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between reconnects; it
	// doubles after each failure (with jitter) and resets once a
	// connection has lived StableAfter.
	MinBackoff, MaxBackoff, StableAfter time.Duration
	// ConnectTimeout bounds one start: process, initialize, first tools/list.
	ConnectTimeout time.Duration
	// CallTimeout is one tools/call's limit for servers without
	// timeout_seconds.
	CallTimeout time.Duration
	// OnToolsChanged is called after a server's tool list changed (a new
	// connection or notifications/tools/list_changed). It must not block.
	OnToolsChanged func(server string)
	// HTTPTransport carries Streamable HTTP; nil = a pooled transport
	// that ignores HTTP_PROXY (the policy names where calls go).
	HTTPTransport http.RoundTripper
}

func (o *Options) defaults() {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.MinBackoff, DefaultMinBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	def(&o.StableAfter, DefaultStableAfter)
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.CallTimeout, DefaultCallTimeout)
	if o.OnToolsChanged == nil {
		o.OnToolsChanged = func(string) {}
	}
}

// Upstream is one supervised MCP server. It is safe for concurrent use.
type Upstream struct {
	id      string
	timeout time.Duration
	opts    Options
	log     *slog.Logger
	client  *mcpsdk.Client
	dial    func(ctx context.Context) (*conn, error)

	cur     atomic.Pointer[conn]    // nil while down
	tools   atomic.Pointer[catalog] // last good list; survives restarts
	lastErr atomic.Pointer[string]  // why it is down
	starts  atomic.Int64            // successful connections so far
	refresh chan struct{}           // list_changed, coalesced
	cancel  context.CancelFunc
	done    chan struct{}
}

// conn is one live session with its tap and how to end it.
type conn struct {
	cs   *mcpsdk.ClientSession
	tap  *tap
	stop func()
	pid  int // stdio only
}

// newUpstream validates s and starts supervising it.
func newUpstream(s policy.Server, o Options, base http.RoundTripper) (*Upstream, error) {
	u := &Upstream{id: s.ID, timeout: o.CallTimeout, opts: o, log: o.Log.With("mcp_server", s.ID),
		refresh: make(chan struct{}, 1), done: make(chan struct{})}
	if s.TimeoutSeconds > 0 {
		u.timeout = time.Duration(s.TimeoutSeconds) * time.Second
	}
	copts := &mcpsdk.ClientOptions{
		// No elicitation or sampling handler and no capabilities: an
		// upstream that asks anyway is answered with an error. Approval
		// comes only from a signed token, never from an upstream's question.
		Capabilities: &mcpsdk.ClientCapabilities{},
		// One tools/call per Dispatch: an input-required result is a tool
		// result for the record, not something chio answers and retries.
		MultiRoundTrip: &mcpsdk.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case u.refresh <- struct{}{}:
			default:
			}
		},
		Logger: u.log,
	}
	switch {
	case len(s.Command) > 0 && s.URL == "":
		u.dial = u.dialStdio(s.Command)
	case s.URL != "" && len(s.Command) == 0:
		copts.KeepAlive = keepAlive
		d, err := u.dialHTTP(s.URL, base)
		if err != nil {
			return nil, err
		}
		u.dial = d
	default:
		return nil, fmt.Errorf("mcp server %q: needs exactly one of command and url", s.ID)
	}
	u.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "chio", Version: "1"}, copts)
	down := "starting"
	u.lastErr.Store(&down)
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	go u.run(ctx)
	return u, nil
}

// ID is the server id from the policy.
func (u *Upstream) ID() string { return u.id }

// Ready reports whether a session is up.
func (u *Upstream) Ready() bool { return u.cur.Load() != nil }

// Starts counts successful connections (restarts + 1).
func (u *Upstream) Starts() int64 { return u.starts.Load() }

// PID is the stdio server's process id (0 when down or not stdio). Tests
// use it to crash the server.
func (u *Upstream) PID() int {
	if c := u.cur.Load(); c != nil {
		return c.pid
	}
	return 0
}

// Tools returns the last tool list the server gave (nil before the first).
func (u *Upstream) Tools() []*Tool {
	if c := u.tools.Load(); c != nil {
		return c.list()
	}
	return nil
}

// Tool returns one listed tool.
func (u *Upstream) Tool(name string) (*Tool, bool) {
	c := u.tools.Load()
	if c == nil {
		return nil, false
	}
	t, ok := c.tools[name]
	return t, ok
}

// downReason says why no session is up.
func (u *Upstream) downReason() string { return *u.lastErr.Load() }

// close stops supervision, ends the session and the process.
func (u *Upstream) close() {
	u.cancel()
	<-u.done
}

// run keeps a session up until ctx ends: connect, list, serve, and after
// every failure wait with capped, jittered exponential backoff.
func (u *Upstream) run(ctx context.Context) {
	defer close(u.done)
	backoff := u.opts.MinBackoff
	for {
		started := time.Now()
		err := u.session(ctx)
		if ctx.Err() != nil {
			return
		}
		msg := fmt.Sprint(err)
		u.lastErr.Store(&msg)
		if time.Since(started) >= u.opts.StableAfter {
			backoff = u.opts.MinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		u.log.Warn("mcp server down; restarting", "err", msg, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, u.opts.MaxBackoff)
	}
}

// session runs one connection from start to end.
func (u *Upstream) session(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
	c, err := u.dial(cctx)
	if err != nil {
		cancel()
		return fmt.Errorf("connect: %w", err)
	}
	defer c.stop()
	err = u.list(cctx, c)
	cancel()
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	u.cur.Store(c)
	defer u.cur.CompareAndSwap(c, nil)
	n := u.starts.Add(1)
	u.log.Info("mcp server connected", "tools", len(u.Tools()), "connections", n)
	ended := make(chan error, 1)
	go func() { ended <- c.cs.Wait() }()
	for {
		select {
		case err := <-ended:
			if err == nil {
				err = errors.New("the server closed the session")
			}
			return fmt.Errorf("session ended: %w", err)
		case <-u.refresh:
			lctx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
			if err := u.list(lctx, c); err != nil {
				// Keep the previous list: a failed refresh must not
				// make tools vanish or appear at random.
				u.log.Warn("tools/list after list_changed failed", "err", err)
			}
			cancel()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// list replaces the catalogue with c's current tool list.
func (u *Upstream) list(ctx context.Context, c *conn) error {
	cat, err := listTools(ctx, c.cs, u.id, func(name string, err error) {
		u.log.Warn("tool not offered", "tool", name, "err", err)
	})
	if err != nil {
		return err
	}
	u.tools.Store(cat)
	u.opts.OnToolsChanged(u.id)
	return nil
}

// drop ends c early (the transport reported it unusable); run reconnects.
func (u *Upstream) drop(c *conn) {
	go c.cs.Close()
}
