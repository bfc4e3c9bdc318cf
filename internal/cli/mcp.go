package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/mcpgw"
	"github.com/chiokernel/chio/policy"
)

func init() {
	register("mcp serve", "MCP server for an agent's MCP client (stdio, or --listen on loopback); signs every call with --key", runMCPServe)
}

// runMCPServe is the bridge a desktop MCP client launches. Stdout carries
// the protocol, so everything else goes to stderr.
func runMCPServe(e *Env, args []string) int {
	fs := newFlags(e, "mcp serve")
	url := fs.String("url", "", "chiod URL (env CHIO_URL, default http://127.0.0.1:7420)")
	capFile := fs.String("capability", "", "capability file (env CHIO_CAPABILITY)")
	keyFile := fs.String("key", "", "agent private key (env CHIO_KEY)")
	wait := fs.Duration("pending-wait", 0, "how long chiod holds a call parked for approval before answering pending (default: chiod's, 20s; max 10m)")
	listen := fs.String("listen", "", "serve Streamable HTTP on this loopback address (host:port) instead of stdio")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	capPath, keyPath := envOr(e, *capFile, "CHIO_CAPABILITY"), envOr(e, *keyFile, "CHIO_KEY")
	if len(pos) != 0 || capPath == "" || keyPath == "" || *wait < 0 || *wait > mcpgw.MaxWait {
		return fail(e, usageError("usage: chio mcp serve --capability FILE --key FILE [--url URL] [--pending-wait 20s] [--listen 127.0.0.1:PORT]"))
	}
	if *listen != "" {
		if err := checkLoopback(*listen); err != nil {
			return fail(e, err)
		}
	}
	capRaw, err := readCapabilityFile(capPath)
	if err != nil {
		return fail(e, err)
	}
	key, err := e.loadKey(keyPath)
	if err != nil {
		return fail(e, err)
	}
	base := envOr(e, *url, "CHIO_URL")
	if base == "" {
		base = "http://127.0.0.1:7420"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	b, err := mcpgw.NewBridge(cctx, mcpgw.BridgeOptions{URL: base, Key: key, Capability: capRaw, PendingWait: *wait, Log: log})
	cancel()
	if err != nil {
		return fail(e, err)
	}
	defer b.Close()
	if *listen != "" {
		err = serveLoopback(ctx, e, *listen, b)
	} else {
		// A malformed line is answered, not the end of the session.
		err = b.ServeStdio(ctx, e.Stdin, e.Stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(e, err)
	}
	return ExitOK
}

// serveLoopback serves the bridge over Streamable HTTP. Only loopback: the
// bridge acts with the agent's key for whoever can reach it.
func serveLoopback(ctx context.Context, e *Env, addr string, b *mcpgw.Bridge) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return b.Server() },
		&mcpsdk.StreamableHTTPOptions{MaxRequestBodyBytes: mcpgw.MaxRequestBytes, SessionTimeout: mcpgw.SessionIdle})
	mux := http.NewServeMux()
	mux.Handle(mcpgw.Path, mcpgw.RefuseAmbiguousIDs(h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.Stderr, "chio mcp serve: MCP on http://%s%s\n", ln.Addr(), mcpgw.Path)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("--listen: " + err.Error())
	}
	if !policy.LoopbackHost(host) {
		return usageError("--listen must be a loopback address (127.0.0.1:PORT): the bridge signs with the agent's key for anyone who reaches it")
	}
	return nil
}
