// Command chiod is the chio kernel daemon.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/chiokernel/chio/internal/daemon"
)

func main() {
	var o daemon.Options
	flag.StringVar(&o.ConfigPath, "config", "chio.toml", "policy file")
	flag.StringVar(&o.Listen, "listen", "", "listen address (overrides [kernel].listen)")
	flag.StringVar(&o.DataDir, "data-dir", "", "data directory (overrides [kernel].data_dir)")
	flag.StringVar(&o.MetricsAuth, "metrics-auth", os.Getenv("CHIO_METRICS_AUTH"), "who may read /metrics: token (the reader or admin token; default) or none (env CHIO_METRICS_AUTH)")
	flag.Parse()
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chiod:", err)
		os.Exit(1)
	}
}

// GCPercent is chiod's garbage-collection target unless GOGC is set. chiod's
// live heap is small (tens of MiB) and every call allocates: a target of
// 400% instead of Go's 100% cut the GC's share of the CPU enough for +10%
// HTTP throughput and a lower p99 (docs/ARCHITECTURE.md, Performance), for
// a higher peak (the stream flood test: 82 MiB instead of 51). GOGC=100
// trades that back; GOMEMLIMIT bounds the heap either way.
const GCPercent = 400

func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}
