// Command chiod is the chio kernel daemon.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/gcpolicy"
)

func main() {
	var o daemon.Options
	flag.StringVar(&o.ConfigPath, "config", "chio.toml", "policy file")
	flag.StringVar(&o.Listen, "listen", "", "listen address (overrides [kernel].listen)")
	flag.StringVar(&o.DataDir, "data-dir", "", "data directory (overrides [kernel].data_dir)")
	flag.StringVar(&o.MetricsAuth, "metrics-auth", os.Getenv("CHIO_METRICS_AUTH"), "who may read /metrics: token (the reader or admin token; default) or none (env CHIO_METRICS_AUTH)")
	// A flag given twice or empty is refused, as chio refuses one: the
	// flag package would keep the last value without a word (`-config
	// prod.toml … -config chio.toml` serving chio.toml), and empty is
	// taken for none.
	flag.VisitAll(func(f *flag.Flag) { f.Value = &once{Value: f.Value} })
	flag.Parse()
	// chiod takes flags only. The flag package stops at the first
	// non-flag, so a policy named without -config (`chiod prod.toml`), or
	// a stray word before other flags, would drop them silently and start
	// chiod on ./chio.toml and ./chio-data: refuse instead.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chiod: refusing to start: unexpected argument %q: chiod takes flags only (name the policy with -config FILE)\n", flag.Arg(0))
		os.Exit(2)
	}
	gcpolicy.Apply(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts the graceful shutdown (bounded by its grace);
	// a second one means "now": with the handler gone, it ends chiod as a
	// kill would, which loses nothing acknowledged (the next start finishes
	// whatever was in flight).
	context.AfterFunc(ctx, stop)
	if err := daemon.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chiod:", err)
		os.Exit(1)
	}
}

// once is a flag value that may be set once, and not to "": empty would
// read as not given, so `-data-dir "$CHIO_DATA"` with CHIO_DATA unset
// would start a new deployment in the policy's data_dir.
type once struct {
	flag.Value
	set bool
}

func (o *once) Set(v string) error {
	if o.set {
		return errors.New("given more than once; it takes one value")
	}
	if v == "" {
		return errors.New("is empty: give it a value or leave it out (empty, it would be taken for none)")
	}
	o.set = true
	return o.Value.Set(v)
}
