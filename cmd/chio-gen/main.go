// Command chio-gen writes a synthetic receipt log (default 1M receipts over
// 30 days) into a data directory that chiod can serve:
//
//	chio-gen -out ./gen-data -n 1000000
//	chiod -config ./gen-data/chio.toml -data-dir ./gen-data
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/chiokernel/chio/internal/store/boltstore/synth"
)

func main() {
	var o synth.Options
	flag.StringVar(&o.Dir, "out", "chio-gen-data", "data directory to create (must not hold a store yet)")
	flag.IntVar(&o.Receipts, "n", 1_000_000, "receipts to write")
	flag.IntVar(&o.Days, "days", 30, "spread timestamps over this many days, ending now")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed for the mix and the approver keys")
	flag.Parse()
	if err := synth.WriteDataDir(context.Background(), o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chio-gen:", err)
		os.Exit(1)
	}
}
