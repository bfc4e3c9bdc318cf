package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

type nopDispatcher struct{}

func (nopDispatcher) Dispatch(context.Context, kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// benchKernel is a kernel on a real, fsync'ing bbolt store with a real
// clock (proofs must be fresh) and a no-op tool.
func benchKernel(b *testing.B) (*kernel.Kernel, *boltstore.Store, keys.PrivateKey, []byte, string) {
	k, st, agent, capRaw, capID, _ := benchKernelStats(b)
	return k, st, agent, capRaw, capID
}

// commitStats counts group commits and the operations they carried.
type commitStats struct{ commits, ops atomic.Int64 }

func (c *commitStats) observe(batch int, _ time.Duration) {
	c.commits.Add(1)
	c.ops.Add(int64(batch))
}

// report says how many operations a commit carried on average.
func (c *commitStats) report(b *testing.B) {
	if n := c.commits.Load(); n > 0 {
		b.ReportMetric(float64(c.ops.Load())/float64(n), "ops/commit")
	}
}

func benchKernelStats(b *testing.B) (*kernel.Kernel, *boltstore.Store, keys.PrivateKey, []byte, string, *commitStats) {
	kkey := keys.FromSeed(make([]byte, 32))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n"), "bench.toml")
	if err != nil {
		b.Fatal(err)
	}
	stats := new(commitStats)
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), kkey, boltstore.Options{Observe: stats.observe})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	k, err := kernel.New(kernel.Config{Key: kkey, Policy: p, Store: st, Dispatcher: nopDispatcher{}, Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	capRaw, c, err := k.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return k, st, agent, capRaw, c.ID, stats
}

// signedCalls pre-signs n calls so the measured loop is the kernel's work.
func signedCalls(b *testing.B, n int, agent keys.PrivateKey, capRaw []byte, capID, prefix string) []*kernel.ToolCall {
	args := json.RawMessage(`{"hello":"world"}`)
	ph, _ := kernel.ParameterHash("demo", "echo", args, nil)
	calls := make([]*kernel.ToolCall, n)
	now := time.Now()
	for i := range calls {
		id := fmt.Sprintf("%s-%d", prefix, i)
		proof, _ := kernel.SignProof(agent, id, capID, "demo", "echo", ph, now)
		calls[i] = &kernel.ToolCall{RequestID: id, Capability: capRaw, Server: "demo", Tool: "echo", Arguments: args, Proof: proof}
	}
	return calls
}

// BenchmarkAllowPath: in-process decisions/s with signed, fsync'd receipts.
func BenchmarkAllowPath(b *testing.B) {
	k, _, agent, capRaw, capID, stats := benchKernelStats(b)
	calls := signedCalls(b, b.N, agent, capRaw, capID, "allow")
	var next atomic.Int64
	b.SetParallelism(64) // many callers so group commit can batch
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := calls[next.Add(1)-1]
			if out, err := k.Submit(context.Background(), c); err != nil || out.Status != kernel.StatusAllowed {
				b.Fatalf("%v %v", out, err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
	reportCPU(b, cpu0)
	stats.report(b)
}

// BenchmarkRawSignCommit is the ceiling the allow path is compared to: sign
// a receipt and group-commit it, nothing else.
func BenchmarkRawSignCommit(b *testing.B) {
	kkey := keys.FromSeed(make([]byte, 32))
	stats := new(commitStats)
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "raw.db"), kkey, boltstore.Options{Observe: stats.observe})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			err := st.Update(context.Background(), func(tx kernel.Tx) error {
				tx.AppendReceipt(&receipt.Receipt{ID: fmt.Sprintf("rc-%d", i), RequestID: "r", Subject: "s", ToolServer: "demo",
					ToolName: "echo", Action: "invoke", ParameterHash: strings.Repeat("a", 64), Timestamp: 1,
					Decision: receipt.Decision{Verdict: receipt.Allow}, PolicyHash: strings.Repeat("b", 64)})
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "receipts/s")
	reportCPU(b, cpu0)
	stats.report(b)
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU time per operation since cpu0: unlike the rate, it
// barely moves when other processes share the machine, and 2 cores ÷ it
// is the CPU-bound ceiling.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// BenchmarkAllowLatencyUnloaded: one caller at a time.
func BenchmarkAllowLatencyUnloaded(b *testing.B) {
	k, _, agent, capRaw, capID := benchKernel(b)
	calls := signedCalls(b, b.N, agent, capRaw, capID, "lat")
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := k.Submit(context.Background(), calls[i]); err != nil {
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
		k, _, agent, capRaw, capID := benchKernel(b)
		calls := signedCalls(b, rate*seconds, agent, capRaw, capID, fmt.Sprintf("open%d", i))
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
				if _, err := k.Submit(context.Background(), c); err != nil {
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
