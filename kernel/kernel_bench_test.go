package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/benchload"
	"github.com/chiokernel/chio/internal/gcpolicy"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// allowRig is benchload's allow-path workload (shared with `chio bench
// --in-process`): a kernel on a real, fsync'ing bbolt store with a real
// clock (proofs must be fresh), a no-op tool, and n calls signed up front
// so that the measured loop is the kernel's work.
func allowRig(b *testing.B, n int) *benchload.AllowRig {
	return allowRigWith(b, n, benchload.Options{})
}

func allowRigWith(b *testing.B, n int, o benchload.Options) *benchload.AllowRig {
	chiodGC(b)
	r, err := benchload.NewAllowRig(b.TempDir(), n, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// chiodGC applies chiod's GC target (unless GOGC is set) for the
// benchmark, so that the kernel is measured as chiod runs it.
func chiodGC(b *testing.B) {
	_, restore := gcpolicy.Apply(os.Getenv)
	b.Cleanup(restore)
}

// runRig runs b.N operations of rig with 64 callers per core (so group
// commit can batch) and reports the rate, process CPU per operation (it
// barely moves when other processes share the machine; cores ÷ it is the
// CPU-bound ceiling), store calls per group commit and where a commit's
// time goes.
func runRig(b *testing.B, rig benchload.Rig, unit string) {
	c0 := rig.Commits()
	b.SetParallelism(64)
	b.ResetTimer()
	start, cpu0 := time.Now(), benchload.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := rig.Do(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	res := benchload.Result{Ops: b.N, Elapsed: time.Since(start), CPU: benchload.ProcessCPU() - cpu0, Commits: rig.Commits().Sub(c0)}
	b.ReportMetric(res.Rate(), unit)
	b.ReportMetric(float64(res.CPUPerOp().Nanoseconds())/1e3, "cpu-µs/op")
	b.ReportMetric(res.CallsPerCommit(), "calls/commit")
	// Where a commit's time goes (boltstore.CommitStats).
	n := float64(max(1, res.Commits.Commits)) * 1e6
	b.ReportMetric(float64(res.Commits.Total)/n, "commit-ms")
	b.ReportMetric(float64(res.Commits.Sign)/n, "sign-ms/commit")
	b.ReportMetric(float64(res.Commits.Write)/n, "write-ms/commit")
}

// BenchmarkAllowPath: in-process decisions/s with signed, fsync'd receipts
// (two group commits per call: the decision before dispatch, the settle).
func BenchmarkAllowPath(b *testing.B) {
	runRig(b, allowRig(b, b.N), "decisions/s")
}

// BenchmarkRawSignCommit is the ceiling the allow path is compared to: sign
// a receipt and group-commit it, nothing else.
func BenchmarkRawSignCommit(b *testing.B) {
	runRaw(b, benchload.Options{})
}

// BenchmarkAllowPathNoFsync and BenchmarkRawSignCommitNoFsync are the same
// two workloads with the store's fsyncs off, which no deployment runs:
// they show what the CPU alone allows, and that the allow path's ratio to
// the raw loop does not come from the disk.
func BenchmarkAllowPathNoFsync(b *testing.B) {
	runRig(b, allowRigWith(b, b.N, benchload.Options{NoFsync: true}), "decisions/s")
}

func BenchmarkRawSignCommitNoFsync(b *testing.B) {
	runRaw(b, benchload.Options{NoFsync: true})
}

func runRaw(b *testing.B, o benchload.Options) {
	chiodGC(b)
	r, err := benchload.NewRawRig(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	runRig(b, r, "receipts/s")
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// BenchmarkAllowLatencyUnloaded: one caller at a time.
func BenchmarkAllowLatencyUnloaded(b *testing.B) {
	rig := allowRig(b, b.N)
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := rig.Do(context.Background()); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	p50, p99 := percentiles(lat)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
}

// BenchmarkAllowAt5kOffered: open-loop 5,000 calls/s for 2 s; latency is
// measured from each call's scheduled time.
func BenchmarkAllowAt5kOffered(b *testing.B) {
	const rate, seconds = 5000, 2
	for i := 0; i < b.N; i++ {
		rig := allowRig(b, 0)
		calls := rig.SignCalls(rate*seconds, fmt.Sprintf("open%d", i))
		lat := make([]time.Duration, len(calls))
		var wg sync.WaitGroup
		start := time.Now()
		interval := time.Second / rate
		b.ResetTimer()
		for j, c := range calls {
			at := start.Add(time.Duration(j) * interval)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
			wg.Add(1)
			go func(j int, c *kernel.ToolCall) {
				defer wg.Done()
				if err := rig.Submit(context.Background(), c); err != nil {
					b.Error(err)
				}
				lat[j] = time.Since(at)
			}(j, c)
		}
		wg.Wait()
		p50, p99 := percentiles(lat)
		b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	}
}

// BenchmarkPipeline: Match + every guard, for policies of 10, 100, 1,000
// grants (the capability holds all of them).
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n")
			ids := make([]string, n)
			for i := 0; i < n; i++ {
				ids[i] = fmt.Sprintf("g%d", i)
				tool := "echo"
				if i != n-1 {
					tool = fmt.Sprintf("tool_%d*", i) // glob grants for other tools
				}
				fmt.Fprintf(&sb, "[[grants]]\nid = %q\nserver = \"demo\"\ntool = %q\n[grants.constraints]\nforbidden_paths = [\"/etc/**\"]\n", ids[i], tool)
			}
			p, err := policy.Parse([]byte(sb.String()), "bench.toml")
			if err != nil {
				b.Fatal(err)
			}
			has := map[string]bool{}
			for _, id := range ids {
				has[id] = true
			}
			pl := &kernel.Pipeline{Guards: kernel.BuiltinGuards(), Budget: kernel.GuardBudget,
				Stopwatch: func() time.Duration { return 0 }}
			call := &kernel.ToolCall{Server: "demo", Tool: "echo", Arguments: json.RawMessage(`{"path":"/tmp/x"}`)}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g, ok := p.Match(func(id string) bool { return has[id] }, "demo", "echo", "invoke")
				if !ok {
					b.Fatal("no grant")
				}
				tool, _ := p.Tool("demo", "echo")
				d := pl.Evaluate(&kernel.Request{Policy: p, Grant: g, Tool: tool, Call: call, Operation: "invoke"}, true)
				if d.Verdict != kernel.Allow {
					b.Fatal(d)
				}
			}
		})
	}
}
