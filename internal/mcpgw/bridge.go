package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// BridgeOptions configure a Bridge.
type BridgeOptions struct {
	// URL is chiod's base URL (the bridge talks to URL + "/mcp").
	URL        string
	Key        keys.PrivateKey
	Capability []byte // exactly as issued
	// PendingWait, if > 0, is how long chiod holds a parked call open
	// before answering "pending" (sent with every call).
	PendingWait time.Duration
	// HTTPClient reaches chiod; nil = a client of its own.
	HTTPClient *http.Client
	Log        *slog.Logger
}

// sessionTTL is the life of the bearer the bridge signs; it re-signs at
// half-life, so a leaked one is short-lived.
const sessionTTL = 10 * time.Minute

// Bridge is an MCP server that holds the agent's key: it offers the tools
// chiod's /mcp offers this agent and forwards each call there, signing it
// first. It is what a desktop MCP client launches (`chio mcp serve`).
type Bridge struct {
	o        BridgeOptions
	capID    string
	audience string
	client   *mcpsdk.Client
	srv      *mcpsdk.Server
	mu       sync.Mutex
	up       *mcpsdk.ClientSession // nil while reconnecting
	targets  map[string]target     // offered name → where it goes
	progress sync.Map              // upstream progress token → progressTarget
	bearer   atomic.Pointer[signedBearer]
	nextTok  atomic.Int64
	// syncs counts syncTools runs as they start; applied (under mu) is
	// the newest run whose list is offered (syncTools).
	syncs   atomic.Int64
	applied int64
	// deliveries follows answers to the client while ServeStdio runs.
	deliveries atomic.Pointer[deliveries]
}

// target is an upstream tool; the zero value is chio_await (no proof).
type target struct{ server, tool string }

type progressTarget struct {
	session *mcpsdk.ServerSession
	token   any
}

type signedBearer struct {
	value string
	renew time.Time
}

// NewBridge checks the key against the capability, learns chiod's kernel
// key (the session token's audience), connects to /mcp and mirrors the
// agent's tools.
func NewBridge(ctx context.Context, o BridgeOptions) (*Bridge, error) {
	var head struct {
		ID      string `json:"id"`
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal(o.Capability, &head); err != nil || head.ID == "" {
		return nil, errors.New("mcp bridge: the capability is not a chio capability (JSON with an id)")
	}
	if head.Subject != o.Key.Public().String() {
		return nil, fmt.Errorf("mcp bridge: the capability's subject %s is not this key (%s)", head.Subject, o.Key.Public())
	}
	if o.HTTPClient == nil {
		// Concurrent tool calls are concurrent POSTs: keep enough idle
		// connections that they are reused, not re-dialled (the default
		// keeps 2 per host).
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 128
		o.HTTPClient = &http.Client{Transport: t}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	o.URL = strings.TrimRight(o.URL, "/")
	b := &Bridge{o: o, capID: head.ID, targets: map[string]target{}}
	aud, err := b.kernelKey(ctx)
	if err != nil {
		return nil, err
	}
	b.audience = aud
	b.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "chio-mcp-bridge", Version: "1"}, &mcpsdk.ClientOptions{
		Capabilities:                &mcpsdk.ClientCapabilities{},
		ToolListChangedHandler:      func(ctx context.Context, _ *mcpsdk.ToolListChangedRequest) { go b.syncTools(context.Background()) },
		ProgressNotificationHandler: b.relayProgress,
		Logger:                      o.Log,
	})
	b.srv = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "chio", Title: "chio (agent bridge)", Version: "1"}, &mcpsdk.ServerOptions{
		Instructions: "Tool calls go through chio, which may deny them or park them for a human's approval. " +
			"A parked call answers with an approval id: call " + AwaitTool + " with it to wait for the outcome.",
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
		Logger:       o.Log,
	})
	if _, err := b.session(ctx); err != nil {
		return nil, err
	}
	if err := b.syncTools(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Server is the MCP server to serve to the client (over stdio or HTTP).
func (b *Bridge) Server() *mcpsdk.Server { return b.srv }

// Close ends the session with chiod.
func (b *Bridge) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up != nil {
		b.up.Close()
		b.up = nil
	}
}

// kernelKey reads chiod's kernel key from /healthz.
func (b *Bridge) kernelKey(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.URL+"/healthz", nil)
	if err != nil {
		return "", fmt.Errorf("mcp bridge: url: %w", err)
	}
	resp, err := b.o.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("mcp bridge: cannot reach chiod: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		KernelKey string `json:"kernel_key"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("mcp bridge: %s/healthz did not answer with a kernel key (%d)", b.o.URL, resp.StatusCode)
	}
	if _, err := keys.ParsePublicKey(h.KernelKey); err != nil {
		return "", fmt.Errorf("mcp bridge: kernel key: %w", err)
	}
	return h.KernelKey, nil
}

// RoundTrip adds the session bearer, re-signed at half-life.
func (b *Bridge) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	sb := b.bearer.Load()
	if sb == nil || now.After(sb.renew) {
		v, err := SignSession(b.o.Key, b.o.Capability, b.audience, now, sessionTTL)
		if err != nil {
			return nil, err
		}
		sb = &signedBearer{value: v, renew: now.Add(sessionTTL / 2)}
		b.bearer.Store(sb)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+sb.value)
	base := b.o.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// session returns the session with chiod, connecting if there is none.
func (b *Bridge) session(ctx context.Context) (*mcpsdk.ClientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up != nil {
		return b.up, nil
	}
	hc := &http.Client{Transport: b, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cs, err := b.client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: b.o.URL + Path, HTTPClient: hc, MaxEventSize: MaxAnswerBytes}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp bridge: connect to %s%s: %w", b.o.URL, Path, err)
	}
	b.up = cs
	return cs, nil
}

// reset drops a session that failed, so the next call reconnects.
func (b *Bridge) reset(cs *mcpsdk.ClientSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up == cs {
		b.up = nil
		go cs.Close()
	}
}

// afterBridgeListed, when set, runs in syncTools once it has chiod's
// list: a test's hook, to land a newer list there. (Atomic: the syncs
// list_changed starts may still run when a test resets it.)
var afterBridgeListed atomic.Pointer[func(context.Context)]

// syncTools mirrors chiod's list for this agent. Syncs run concurrently
// (one per list_changed), and one that fetched its list earlier may finish
// later: a list is applied only if no sync started after this one has
// applied its own, so an older list never replaces a newer one (a tool
// chiod withdrew is not offered again).
func (b *Bridge) syncTools(ctx context.Context) error {
	seq := b.syncs.Add(1)
	cs, err := b.session(ctx)
	if err != nil {
		return err
	}
	want := map[string]*mcpsdk.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp bridge: tools/list: %w", err)
		}
		want[t.Name] = t
	}
	if hook := afterBridgeListed.Load(); hook != nil {
		(*hook)(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq < b.applied {
		return nil // a newer list is offered already
	}
	b.applied = seq
	var gone []string
	for name := range b.targets {
		if want[name] == nil {
			gone = append(gone, name)
			delete(b.targets, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		var tg target
		if name != AwaitTool {
			server, _ := t.Meta[MetaServer].(string)
			tool, _ := t.Meta[MetaTool].(string)
			if server == "" || tool == "" {
				continue // not a tool chio can sign for
			}
			tg = target{server, tool}
		}
		b.targets[name] = tg
		b.srv.AddTool(t, b.forward(tg))
	}
	return nil
}

// forward signs and sends one call to chiod, with the governed intent the
// client put in _meta (agentIntent); the client's other _meta members are
// not passed on. A lost connection is retried with the same request id and
// intent (chiod answers a repeat with the first call's outcome, so the
// tool runs at most once), the proof re-signed; when every attempt fails,
// the answer names the request id to await (lostChiod).
func (b *Bridge) forward(tg target) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		params := &mcpsdk.CallToolParams{Name: req.Params.Name, Arguments: args, Meta: mcpsdk.Meta{}}
		if b.o.PendingWait > 0 {
			params.Meta[MetaWait] = int(b.o.PendingWait / time.Second)
		}
		if pt := req.Params.GetProgressToken(); pt != nil {
			up := "chio-bridge-" + strconv.FormatInt(b.nextTok.Add(1), 10)
			b.progress.Store(up, progressTarget{req.Session, pt})
			defer b.progress.Delete(up)
			params.SetProgressToken(up)
		}
		var requestID, paramHash string
		if tg.server != "" {
			// Refused here as chiod refuses them (callHandler): arguments
			// too large for /mcp's request bound would meet chiod's 413
			// instead, which says nothing of the call.
			if len(args) > kernel.MaxArgumentsBytes {
				return refused(fmt.Sprintf("arguments larger than %d bytes", kernel.MaxArgumentsBytes)), nil
			}
			// The agent's governed intent, checked and made canonical once:
			// every attempt below signs and sends these same bytes.
			intent, err := agentIntent(req.Params.Meta)
			if err != nil {
				return refused(err.Error()), nil
			}
			if paramHash, err = kernel.ParameterHash(tg.server, tg.tool, args, intent); err != nil {
				return refused(err.Error()), nil
			}
			if intent != nil {
				params.Meta[MetaIntent] = intent
			}
			requestID = kernel.NewID("mcp-")
		}
		var lastErr error
		sent := false // a tools/call for requestID went to chiod
		for attempt := range 3 {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					b.leftBehind(tg, requestID, sent, ctx.Err())
					return nil, ctx.Err()
				case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
				}
			}
			if tg.server != "" {
				p, err := kernel.SignProof(b.o.Key, requestID, b.capID, tg.server, tg.tool, paramHash, time.Now())
				if err != nil {
					return refused(err.Error()), nil
				}
				params.Meta[MetaProof] = CallProof{RequestID: requestID, IssuedAt: p.IssuedAt, Signature: p.Signature}
			}
			cs, err := b.session(ctx)
			if err != nil {
				lastErr = err
				continue
			}
			sent = true
			res, err := cs.CallTool(ctx, params)
			if err == nil {
				b.answering(ctx, tg, requestID, res)
				return res, nil
			}
			lastErr = err
			if ctx.Err() != nil {
				b.leftBehind(tg, requestID, sent, err)
				return nil, err
			}
			if !lostConnection(err) {
				if tg.server != "" {
					// A JSON-RPC error for a call that was sent: chiod, or a
					// proxy in front of it, may have received, decided and
					// run it.
					return mayHaveReachedChio(requestID, "chiod (or a proxy in front of it) answered this call with an error: "+err.Error()), nil
				}
				return nil, err
			}
			b.reset(cs)
		}
		if tg.server != "" {
			return lostChiod(requestID, lastErr), nil
		}
		return nil, lastErr
	}
}

// leftBehind logs a call the client stopped waiting for (it cancelled the
// call, or went away: closed stdin, ended its session) once it went to
// chiod: chio may have decided it, and it may be parked or running, yet
// only the bridge knows its request id, and no answer will carry it. The
// log (stderr, which MCP clients keep) names it, for chio_await or `chio
// await`.
func (b *Bridge) leftBehind(tg target, requestID string, sent bool, err error) {
	if tg.server == "" || !sent {
		return
	}
	b.o.Log.Warn("the client stopped waiting for a call sent to chio; chio may have decided it, and it may yet run: "+
		"call "+AwaitTool+" with {\"id\":\""+requestID+"\"} or run `chio await "+requestID+" --key <agent key>` for its outcome",
		"request_id", requestID, "server", tg.server, "tool", tg.tool, "err", err)
}

// answering follows res, chiod's answer, on its way to the client
// (deliveries), and logs it if the client stopped waiting as it came: the
// client then drops it, and only the log keeps its request id.
func (b *Bridge) answering(ctx context.Context, tg target, requestID string, res *mcpsdk.CallToolResult) {
	if d := b.deliveries.Load(); d != nil {
		d.answered(res)
	}
	if ctx.Err() != nil {
		b.leftBehind(tg, requestID, true, ctx.Err())
	}
}

// lostChiod answers a call whose every attempt lost its connection to
// chiod, or could not connect.
func lostChiod(requestID string, err error) *mcpsdk.CallToolResult {
	return mayHaveReachedChio(requestID, "chio mcp serve lost its connection to chiod: "+err.Error())
}

// mayHaveReachedChio answers a call chio may have received without the
// bridge getting its outcome: the tool may be running or have run, and an
// error would invite the client's retry, a new request id and a second
// call. So, as chiod answers an outcome it could not record
// (submitError), the answer names the request id to await.
func mayHaveReachedChio(requestID, reason string) *mcpsdk.CallToolResult {
	return chioResult(fmt.Sprintf("%s. This call may have reached chio, and the tool may have run: do not call it "+
		"again. Call %s with {\"id\":%q} for its outcome once chio is reachable. (If %s finds no call with this id, "+
		"once chio is healthy again, chio never received it and the tool did not run.)", reason, AwaitTool, requestID, AwaitTool),
		mcpsdk.Meta{MetaStatus: StatusUnrecorded, MetaRequestID: requestID, MetaReason: reason})
}

// lostConnection: the call may not have reached chiod, or its answer was
// lost; asking again with the same request id is safe.
func lostConnection(err error) bool {
	var we *jsonrpc.Error
	return errors.Is(err, mcpsdk.ErrConnectionClosed) || errors.Is(err, mcpsdk.ErrSessionMissing) ||
		errors.As(err, &we) && we.Code == codeRejectedByTransport
}

// codeRejectedByTransport is the SDK's code for a request its transport
// could not deliver (the HTTP request failed before any answer).
const codeRejectedByTransport = -32005

// relayProgress passes chiod's progress notifications to the client that
// asked for them.
func (b *Bridge) relayProgress(ctx context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
	v, ok := b.progress.Load(req.Params.ProgressToken)
	if !ok {
		return
	}
	pt := v.(progressTarget)
	_ = pt.session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: pt.token,
		Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
}
