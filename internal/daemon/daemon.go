// Package daemon is chiod: it loads and validates the policy, opens the
// store, wires kernel, dispatcher and HTTP API, and shuts down gracefully
// (the HTTP server stops taking calls, then the commit queue is drained).
package daemon

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/dashboard"
	"github.com/chiokernel/chio/channels/email"
	slackch "github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcpgw"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// MinTokenLen is the shortest bearer token chiod accepts from the
// environment: the tokens are compared in constant time but not rate
// limited, so they must be unguessable.
const MinTokenLen = 32

// Options are chiod's flags.
type Options struct {
	ConfigPath string
	Listen     string // overrides [kernel].listen
	DataDir    string // overrides [kernel].data_dir
	// MetricsAuth is who may read GET /metrics: "token" (the default: the
	// reader or admin token) or "none" (anyone who can reach chiod).
	MetricsAuth string
	// Getenv reads the environment (CHIO_ADMIN_TOKEN, CHIO_READ_TOKEN);
	// nil = os.Getenv.
	Getenv func(string) string
	Out    io.Writer
	Clock  clock.Clock
	// Ready, if set, is called with the bound address once serving.
	Ready func(addr string)
}

// Run serves until ctx is cancelled. A start it refuses leaves the data
// dir as it found it (startfiles.go).
func Run(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = os.Stderr
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	switch o.MetricsAuth {
	case "":
		o.MetricsAuth = MetricsAuthToken
	case MetricsAuthToken, MetricsAuthNone:
	default:
		return fmt.Errorf("refusing to start: -metrics-auth must be %s or %s, not %q", MetricsAuthToken, MetricsAuthNone, o.MetricsAuth)
	}
	log := slog.New(slog.NewTextHandler(o.Out, nil))
	// Before anything is started: the stdio MCP servers must not read
	// chiod's environment or memory through /proc (nodump_linux.go).
	if err := hideProcess(); err != nil {
		return err
	}
	// Before the pid file tells anyone where to send SIGHUP (catchHUP).
	hup, stopHUP := catchHUP()
	defer stopHUP()
	p, err := loadPolicy(o.ConfigPath)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", missingPolicy(o.ConfigPath, err))
	}
	started := restartSettingsOf(p) // before the flags below override [kernel]
	publicURLDefaulted := p.Kernel.PublicURL == policy.DefaultPublicURL(p.Kernel)
	if o.Listen != "" {
		p.Kernel.Listen = o.Listen
	}
	if o.DataDir != "" {
		p.Kernel.DataDir = o.DataDir
	}
	dataDir := p.Kernel.DataDir
	// Files named in the policy are read before anything is written.
	tlsConfig, err := loadTLS(p.Kernel)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	files, err := noteDataDir(dataDir)
	if err != nil {
		return err
	}
	// Deferred before the lock's release, so run after it: the pid file is
	// gone, and a data dir this refused start made can be removed.
	defer func() { err = files.undoDir(err) }()
	// One chiod per data dir: the lock comes first, so a second chiod says
	// who holds the dir instead of waiting on the store's lock.
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	defer lock.release()
	if err := files.noteEntries(); err != nil {
		return err
	}
	// Deferred after the lock, so run while chiod still holds it, and
	// before it: after every other deferred close (the store's file is
	// closed before it is removed).
	defer func() { err = files.undoEntries(err, log) }()
	// Bind first: with -listen 127.0.0.1:0 the real address is known before
	// channels build links from the public URL.
	listen := p.Kernel.Listen // as configured: the printed URL's family (connectAddr)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return listenError(listen, err)
	}
	defer ln.Close()
	if o.Listen != "" && publicURLDefaulted {
		p.Kernel.Listen = ln.Addr().String() // the real port when -listen asked for :0
		p.Kernel.PublicURL = policy.DefaultPublicURL(p.Kernel)
	}
	if err := storeKeyLost(p, dataDir); err != nil {
		return err
	}
	key, created, err := loadOrCreateKey(filepath.Join(dataDir, KeyFile))
	if err != nil {
		return err
	}
	if err := kernelKeyNotApprover(p, key.Public()); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if created {
		log.Info("generated kernel key", "path", filepath.Join(dataDir, KeyFile), "public_key", key.Public().String())
	}
	adminToken, adminPath, err := bearerToken(o.Getenv, dataDir, "CHIO_ADMIN_TOKEN", AdminTokenFile, log)
	if err != nil {
		return err
	}
	readToken, readPath, err := bearerToken(o.Getenv, dataDir, "CHIO_READ_TOKEN", ReadTokenFile, log)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(readToken), []byte(adminToken)) == 1 {
		// The reader token would then carry the admin's powers: refuse
		// rather than quietly hand an auditor's credential the keys.
		return errors.New("CHIO_READ_TOKEN equals the admin token: give the reader token its own value")
	}
	var authorities []keys.PublicKey
	if p.Kernel.AuthorityKey != "" {
		ak, err := keys.ParsePublicKey(p.Kernel.AuthorityKey)
		if err != nil {
			return fmt.Errorf("authority_key: %w", err)
		}
		authorities = append(authorities, ak)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	var k *kernel.Kernel
	// Channels are built before the store is opened: one whose secret is
	// missing refuses the start before a database records a new kernel key.
	// (Nothing runs in them until chiod serves: push.close is deferred
	// below, where it runs before store.Close.)
	push, err := buildChannels(p, key, dataDir, o.Clock, log, func() *policy.Policy { return k.Policy() },
		func(id string) (*approval.Request, error) { return k.Approval(id) })
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	var metrics *httpapi.Metrics
	var store store
	metrics = httpapi.NewMetrics(func() float64 { return float64(store.QueueDepth()) })
	rlog := newReceiptLog(p, key, o.Clock, log)
	st, err := openStore(ctx, p, dataDir, key, rlog, storeHooks{observe: metrics.Commit, phases: metrics.CommitPhases,
		// A store that failed and healed lets the kernel arm and announce
		// what a failed-yet-durable commit parked, and finish the calls
		// the failure left in flight.
		onHeal: func() { _ = k.RecoverAfterHeal(context.Background()) }})
	if err != nil && created && mayHoldKey(p, err) {
		// The database may have recorded this new key: it stays though
		// the start is refused, or the database would be bound to a key
		// nobody has. (A bbolt chio.db made with it goes with it.)
		files.keep(KeyFile)
		return fmt.Errorf("%w; the new kernel key %s is kept in %s: the database may have recorded it; "+
			"start again with this data dir, or copy that kernel.pem to the database's other replicas", err, key.Public(), filepath.Join(dataDir, KeyFile))
	}
	if err != nil {
		return err
	}
	store = st.store
	defer store.Close()
	// kernel.pem, the token files, email-link.key and chio.db are fsynced
	// as written; their names in the data dir (and the data dir's own, when this start
	// made it) are made durable before anything is served: a power cut
	// must not leave the store's decisions without their file, nor a
	// database bound to a key file that vanished.
	if err := files.syncEntries(); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if st.phases {
		metrics.ExpectCommitPhases()
	}
	stopLog, err := startReceiptLog(ctx, rlog, store)
	if err != nil {
		return err
	}
	defer stopLog() // before store.Close: the last checkpoint rides the commit queue
	// The MCP gateway is built after the kernel; upstream tool lists can
	// change before that, so it is reached through a pointer.
	var gateway atomic.Pointer[mcpgw.Gateway]
	disp, err := dispatch.New(p.Servers, dataDir, dispatch.WithMCP(mcp.Options{Log: log,
		OnToolsChanged: func(server string) {
			if g := gateway.Load(); g != nil {
				g.ToolsChanged(server)
			}
		}}),
		// Calls to http tool servers carry the kernel's signature, on its
		// clock, so a tool server can refuse anyone else's.
		dispatch.WithCallSigner(key.SignRaw, o.Clock.Now))
	if err != nil {
		return err
	}
	defer disp.Close()
	defer push.close() // before store.Close: clicks still voting finish first
	// Notifications go out after each request is durable, through a hub that
	// retries with backoff and records failures on the request; a channel
	// that is down never blocks or approves anything.
	hub := channels.NewHub(channels.HubOptions{Channels: push.list,
		OnFailure: func(id, ch, msg string) { _ = k.RecordNotifyFailure(context.Background(), id, ch, msg) },
		Metric:    func(ch, res string) { metrics.Notify.WithLabelValues(ch, res).Inc() }})
	defer hub.Close()
	names := make([]string, 0, len(push.list))
	for _, c := range push.list {
		names = append(names, c.Name())
	}
	metrics.ExpectChannels(names, channels.Results())
	// Arguments to MCP tools are checked against the tool's inputSchema on
	// every front door, and again when an approver amends them.
	kcfg := kernel.Config{Key: key, Policy: p, Store: store, Dispatcher: disp,
		Clock: o.Clock, Authorities: authorities, Observer: metrics, Notifier: hub,
		Guards: []kernel.Guard{mcp.SchemaGuard{V: disp.MCP()}},
		// An amendment that breaks the schema is refused when its token is
		// presented (nothing consumed), not only denied on resume.
		Schemas: disp.MCP()}
	if st.relay != nil {
		// Replicas: events reach waiters on every replica.
		kcfg.Relay = st.relay
	}
	k, err = kernel.New(kcfg)
	if err != nil {
		return err
	}
	if st.relay != nil {
		st.relay.Attach(k)
	}
	// Deliveries stop retrying before the dispatcher and the store close: a
	// call cut off by the shutdown stays in flight for the next start.
	defer k.Close()
	// Re-arm every pending approval's deadline (those that passed while we
	// were down fire now); calls cut off by a crash are finished in the
	// background while chiod serves.
	if err := k.Recover(ctx); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	api, err := httpapi.New(httpapi.Config{Kernel: k, Store: store, AdminToken: adminToken,
		ReadToken: readToken, Metrics: metrics, Ready: store.Ready, MetricsPublic: o.MetricsAuth == MetricsAuthNone})
	if err != nil {
		return err
	}
	if p.Channels.Dashboard == nil || p.Channels.Dashboard.Enabled {
		dash, err := dashboard.New(dashboard.Options{})
		if err != nil {
			return err
		}
		api.HandleAnswers(dashboard.Prefix, dash)
	}
	if push.slack != nil {
		api.HandleAnswers("POST "+slackch.InteractionsPath, push.slack.InteractionsHandler(k))
	}
	gw, err := mcpgw.New(mcpgw.Options{Kernel: k, Catalog: disp.MCP(), Log: log})
	if err != nil {
		return err
	}
	gateway.Store(gw)
	api.Handle(mcpgw.Path, gw)
	if push.email != nil {
		api.HandleAnswers(email.LinkPath, push.email.Handler(k))
	}
	// A reload can remove approvers: their dashboard sessions and event
	// streams end at once (a later reload putting the key back revives
	// none). It can change what each agent's capability grants: connected
	// MCP clients are told (notifications/tools/list_changed), as the
	// gateway's listChanged capability promises.
	stopReload := watchReload(hup, o.ConfigPath, k, started, log, func() {
		api.PolicyReloaded()
		gw.ToolsChanged("")
	})
	defer stopReload()
	// No WriteTimeout: it counts from a request's arrival, so it would cut
	// SSE streams and long-polls. The handler bounds every write instead
	// (internal/httpapi/writedeadline.go), and each request body's read.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		TLSConfig: tlsConfig}
	// SSE streams, long-polls and MCP sessions (their streams and waits
	// on parked calls) would otherwise hold shutdown open.
	srv.RegisterOnShutdown(api.CloseStreams)
	srv.RegisterOnShutdown(gw.CloseSessions)
	// Nothing is refused from here on: what this start wrote in the data
	// dir is the deployment's now.
	files.commit()
	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // the certificate loaded above
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	addr := ln.Addr().String()
	log.Info("chiod serving", "addr", addr, "policy", p.Source, "policy_hash", p.Hash, "kernel_key", key.Public().String(),
		"pid", os.Getpid(), "pid_file", lock.path, "metrics_auth", o.MetricsAuth)
	warnPlainHTTP(log, ln.Addr(), tlsConfig != nil)
	warnPlainPublicURL(log, p.Kernel.PublicURL)
	// Under TLS chiod serves https only: the URLs printed say so.
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	fmt.Fprint(o.Out, firstSteps(scheme+"://"+connectAddr(listen, ln.Addr()), p, adminPath, readPath, lock.path))
	if o.Ready != nil {
		o.Ready(addr)
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	log.Info("shutting down: draining requests and the commit queue (a second SIGINT or SIGTERM stops chiod at once; what is in flight is finished at the next start)")
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr == nil {
		return nil
	}
	// The grace period ended with requests still running (a tool that
	// does not answer). Stopping the kernel cuts their deliveries off:
	// each call stays in flight for the next start, and its caller is
	// answered outcome_unknown, given a moment to be written, rather than
	// left to a connection cut when chiod exits.
	k.Close()
	actx, acancel := context.WithTimeout(context.Background(), ShutdownAnswerGrace)
	defer acancel()
	_ = srv.Shutdown(actx)
	return fmt.Errorf("shutdown: requests were still running after the %s grace period; the calls they left in flight are finished at the next start", ShutdownGrace)
}

// Shutdown bounds: requests in progress get ShutdownGrace to finish;
// those still running then (their deliveries cut off) get
// ShutdownAnswerGrace to write their answer.
const (
	ShutdownGrace       = 15 * time.Second
	ShutdownAnswerGrace = 5 * time.Second
)
