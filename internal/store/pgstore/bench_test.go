package pgstore_test

// The allow path on PostgreSQL, database included, on this machine:
//
//	go test ./internal/store/pgstore -run '^$' -bench . -benchtime 20000x
//
// Figures are printed (decisions/s, p50, p99), never asserted. The kernels
// and PostgreSQL share the machine's cores.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

type nopDispatcher struct{}

func (nopDispatcher) Dispatch(context.Context, kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// replicaKernels starts n kernels, each on its own pgstore (its own pool,
// committers and LISTEN connection), all on one database and kernel key.
func replicaKernels(b *testing.B, n int) ([]*kernel.Kernel, keys.PrivateKey, []byte, string) {
	dsn := pgtest.Database(b)
	kkey := keys.FromSeed(make([]byte, 32))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n"), "bench.toml")
	if err != nil {
		b.Fatal(err)
	}
	var ks []*kernel.Kernel
	for i := 0; i < n; i++ {
		st, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: kkey, Observe: func(n int, d time.Duration) { commitN.Add(1); commitOps.Add(int64(n)); commitNs.Add(int64(d)) }})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		k, err := kernel.New(kernel.Config{Key: kkey, Policy: p, Store: st, Dispatcher: nopDispatcher{}, Clock: clock.Real{}, Relay: st.Events()})
		if err != nil {
			b.Fatal(err)
		}
		st.Events().Attach(k)
		b.Cleanup(k.Close)
		ks = append(ks, k)
	}
	capRaw, c, err := ks[0].IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return ks, agent, capRaw, c.ID
}

// BenchmarkAllowPathPG: decisions/s and latency, 64 or 256 concurrent
// callers (or one: unloaded) spread over 1 or 3 in-process replicas.
func BenchmarkAllowPathPG(b *testing.B) {
	for _, c := range []struct{ n, callers int }{{1, 1}, {1, 64}, {1, 256}, {3, 64}} {
		n, callers := c.n, c.callers
		b.Run(fmt.Sprintf("replicas=%d/callers=%d", n, callers), func(b *testing.B) {
			ks, agent, capRaw, capID := replicaKernels(b, n)
			args := json.RawMessage(`{"hello":"world"}`)
			ph, _ := kernel.ParameterHash("demo", "echo", args, nil)
			calls := make([]*kernel.ToolCall, b.N)
			now := time.Now()
			prefix := kernel.NewID("b-")
			for i := range calls {
				id := fmt.Sprintf("%s-%d", prefix, i)
				proof, _ := kernel.SignProof(agent, id, capID, "demo", "echo", ph, now)
				calls[i] = &kernel.ToolCall{RequestID: id, Capability: capRaw, Server: "demo", Tool: "echo", Arguments: args, Proof: proof}
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			goCPU0, pgCPU0 := processCPU(), postgresCPU()
			commitN.Store(0)
			commitOps.Store(0)
			commitNs.Store(0)
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < callers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						t0 := time.Now()
						out, err := ks[i%n].Submit(context.Background(), calls[i])
						lat[i] = time.Since(t0)
						if err != nil || out.Status != kernel.StatusAllowed {
							b.Errorf("%v %v", out, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			goCPU, pgCPU := processCPU()-goCPU0, postgresCPU()-pgCPU0
			b.ReportMetric(float64(goCPU.Microseconds())/float64(b.N), "chiod-cpu-µs/op")
			b.ReportMetric(float64(pgCPU.Microseconds())/float64(b.N), "postgres-cpu-µs/op")
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "decisions/s")
			if c := commitN.Load(); c > 0 {
				// How busy each replica's committer was: at ~100% the
				// serial commit path is the limit, not the callers.
				b.Logf("%d commits, %.1f store calls each, %.2f ms each; committers busy %.0f%% of the time",
					c, float64(commitOps.Load())/float64(c), float64(commitNs.Load())/float64(c)/1e6,
					float64(commitNs.Load())/float64(elapsed.Nanoseconds())*100/float64(n))
			}
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
			b.Logf("%d replicas, %d callers: %d decisions in %s = %.0f/s; p50 %s p99 %s", n, callers, b.N, elapsed.Round(time.Millisecond), rate,
				lat[len(lat)/2].Round(10*time.Microsecond), lat[min(len(lat)-1, len(lat)*99/100)].Round(10*time.Microsecond))
		})
	}
}

// commitN, commitOps and commitNs count the replicas' commits (Observe).
var commitN, commitOps, commitNs atomic.Int64

// processCPU is this process's CPU time (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU sums the CPU time of this test's PostgreSQL server and its
// backends (Linux /proc; 0 elsewhere): the database's share of a decision.
// Other PostgreSQL servers on the machine are not counted.
func postgresCPU() time.Duration {
	srv, err := pgtest.Shared()
	if err != nil {
		return 0
	}
	var ticks int64
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndex(s, ")")
		if i < 0 {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s[:i])[0])
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); pid != srv.PID() && ppid != srv.PID() {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// BenchmarkRawSignCommitPG is the store's ceiling: sign a receipt and
// group-commit it, nothing else.
func BenchmarkRawSignCommitPG(b *testing.B) {
	st, err := pgstore.Open(context.Background(), pgstore.Options{DSN: pgtest.Database(b), Key: keys.FromSeed(make([]byte, 32))})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	start := time.Now()
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
}
