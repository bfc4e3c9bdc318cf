// Package benchload drives the kernel's allow path and the store's raw
// sign-and-commit loop in process, on a real fsync'ing bbolt store, so that
// `go test -bench` (kernel/kernel_bench_test.go) and `chio bench
// --in-process` measure exactly the same thing.
//
// It is a measuring tool, not a server: nothing in chiod imports it.
package benchload

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Policy is one builtin server and one grant: the call path with the
// cheapest guards, so the figures are the kernel's floor.
const Policy = `[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`

// Options shape a rig's store.
type Options struct {
	// NoFsync turns the store's fsyncs off. No deployment runs so: it
	// measures the ceiling the CPU alone sets, to show where the time goes.
	NoFsync bool
}

// Rig is one prepared workload: Do performs the next operation and may be
// called from many goroutines at once.
type Rig interface {
	Do(ctx context.Context) error
	// Commits reports the group commits so far: how many, the calls they
	// carried and where their time went.
	Commits() Commits
	Close() error
}

// Commits add up group commits (boltstore.CommitStats).
type Commits struct {
	Commits, Calls                    int64
	Total, Run, Sign, Receipts, Write time.Duration
}

// Sub is what happened between o and c.
func (c Commits) Sub(o Commits) Commits {
	return Commits{c.Commits - o.Commits, c.Calls - o.Calls, c.Total - o.Total, c.Run - o.Run,
		c.Sign - o.Sign, c.Receipts - o.Receipts, c.Write - o.Write}
}

// Cycle describes the average commit: its calls, its duration and its
// phases (boltstore.CommitStats says what each covers).
func (c Commits) Cycle() string {
	n := time.Duration(max(1, c.Commits))
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d/n)/1e6) }
	return fmt.Sprintf("commit every %s ms with %.0f calls: run %s, sign %s, receipts %s, write+fsync %s ms",
		ms(c.Total), float64(c.Calls)/float64(n), ms(c.Run), ms(c.Sign), ms(c.Receipts), ms(c.Write))
}

// commitStats collects them (boltstore.Options.Observe).
type commitStats struct {
	mu sync.Mutex
	c  Commits
}

func (c *commitStats) observe(s boltstore.CommitStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Commits++
	c.c.Calls += int64(s.Calls)
	c.c.Total += s.Total
	c.c.Run += s.Run
	c.c.Sign += s.Sign
	c.c.Receipts += s.Receipts
	c.c.Write += s.Write
}

func (c *commitStats) Commits() Commits {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c
}

// nopTool answers every call at once.
type nopTool struct{}

func (nopTool) Dispatch(context.Context, kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// AllowRig submits pre-signed calls that the policy allows: each is
// authenticated (capability, Ed25519 proof), judged by the guards, made
// durable with its signed allow receipt, dispatched to a no-op tool and
// settled — two group commits per call.
type AllowRig struct {
	commitStats
	Kernel *kernel.Kernel
	Store  *boltstore.Store
	Agent  keys.PrivateKey
	Cap    json.RawMessage
	CapID  string
	calls  []*kernel.ToolCall
	next   atomic.Int64
}

// NewAllowRig opens a fresh store in dir and signs n calls up front (the
// agent's signing is not the kernel's work). Proofs are valid for
// kernel.MaxProofSkew: run them within a minute.
func NewAllowRig(dir string, n int, o Options) (*AllowRig, error) {
	kkey := keys.FromSeed(make([]byte, 32))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	p, err := policy.Parse([]byte(Policy), "bench.toml")
	if err != nil {
		return nil, err
	}
	r := &AllowRig{Agent: agent}
	r.Store, err = boltstore.Open(filepath.Join(dir, "allow.db"), kkey, boltstore.Options{Observe: r.observe, NoSync: o.NoFsync})
	if err != nil {
		return nil, err
	}
	r.Kernel, err = kernel.New(kernel.Config{Key: kkey, Policy: p, Store: r.Store, Dispatcher: nopTool{}, Clock: clock.Real{},
		// One agent drives every caller of the bench, at any concurrency.
		MaxCallsInFlightPerAgent: math.MaxInt})
	if err != nil {
		r.Store.Close()
		return nil, err
	}
	capRaw, c, err := r.Kernel.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Cap, r.CapID = capRaw, c.ID
	r.calls = r.SignCalls(n, "allow")
	return r, nil
}

// SignCalls signs n distinct calls to demo/echo, with request ids as the
// SDKs make them (a UUIDv7 each, so they ascend in the order signed),
// after prefix.
func (r *AllowRig) SignCalls(n int, prefix string) []*kernel.ToolCall {
	args := json.RawMessage(`{"hello":"world"}`)
	ph, _ := kernel.ParameterHash("demo", "echo", args, nil)
	calls := make([]*kernel.ToolCall, n)
	now := time.Now()
	for i := range calls {
		id := kernel.NewID(prefix + "-")
		proof, _ := kernel.SignProof(r.Agent, id, r.CapID, "demo", "echo", ph, now)
		calls[i] = &kernel.ToolCall{RequestID: id, Capability: r.Cap, Server: "demo", Tool: "echo", Arguments: args, Proof: proof}
	}
	return calls
}

// Do submits the next pre-signed call and checks that it was allowed and
// ran.
func (r *AllowRig) Do(ctx context.Context) error {
	i := r.next.Add(1) - 1
	if int(i) >= len(r.calls) {
		return fmt.Errorf("benchload: only %d calls were signed", len(r.calls))
	}
	return r.Submit(ctx, r.calls[i])
}

// Submit sends one call and checks that it was allowed and ran.
func (r *AllowRig) Submit(ctx context.Context, c *kernel.ToolCall) error {
	out, err := r.Kernel.Submit(ctx, c)
	if err != nil {
		return err
	}
	if out.Status != kernel.StatusAllowed || out.Execution != kernel.ExecutionSucceeded {
		return fmt.Errorf("benchload: call %s: %s/%s %s", c.RequestID, out.Status, out.Execution, out.Reason)
	}
	return nil
}

// Close shuts the kernel and the store.
func (r *AllowRig) Close() error {
	r.Kernel.Close()
	return r.Store.Close()
}

// RawRig is the ceiling the allow path is compared to: append one receipt
// per operation and group-commit it (signed, fsync'd), nothing else.
type RawRig struct {
	commitStats
	Store *boltstore.Store
	n     atomic.Int64
}

// NewRawRig opens a fresh store in dir.
func NewRawRig(dir string, o Options) (*RawRig, error) {
	r := &RawRig{}
	var err error
	r.Store, err = boltstore.Open(filepath.Join(dir, "raw.db"), keys.FromSeed(make([]byte, 32)), boltstore.Options{Observe: r.observe, NoSync: o.NoFsync})
	if err != nil {
		return nil, err
	}
	return r, nil
}

var (
	hash64a = strings.Repeat("a", 64)
	hash64b = strings.Repeat("b", 64)
)

// Do signs and commits one receipt.
func (r *RawRig) Do(ctx context.Context) error {
	i := r.n.Add(1)
	return r.Store.Update(ctx, func(tx kernel.Tx) error {
		tx.AppendReceipt(&receipt.Receipt{ID: "rc-" + strconv.FormatInt(i, 10), RequestID: "r", Subject: "s", ToolServer: "demo",
			ToolName: "echo", Action: "invoke", ParameterHash: hash64a, Timestamp: 1,
			Decision: receipt.Decision{Verdict: receipt.Allow}, PolicyHash: hash64b})
		return nil
	})
}

// Close closes the store.
func (r *RawRig) Close() error { return r.Store.Close() }

// Result is one measured run.
type Result struct {
	Ops     int
	Elapsed time.Duration
	CPU     time.Duration // process CPU time over the run (0 where unknown)
	Commits Commits       // the run's group commits
}

// Rate is operations per second.
func (r Result) Rate() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// CPUPerOp is process CPU time per operation.
func (r Result) CPUPerOp() time.Duration { return r.CPU / time.Duration(max(1, r.Ops)) }

// CallsPerCommit is how many store calls a group commit carried on average.
func (r Result) CallsPerCommit() float64 {
	return float64(r.Commits.Calls) / float64(max(1, r.Commits.Commits))
}

// Run performs n operations of rig with conc concurrent callers (closed
// loop) and measures them.
func Run(ctx context.Context, rig Rig, n, conc int) (Result, error) {
	c0 := rig.Commits()
	var left atomic.Int64
	left.Store(int64(n))
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	cpu0, start := ProcessCPU(), time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := rig.Do(ctx); err != nil {
					once.Do(func() { firstErr = err })
					left.Store(0)
					return
				}
			}
		}()
	}
	wg.Wait()
	res := Result{Ops: n, Elapsed: time.Since(start), CPU: ProcessCPU() - cpu0}
	res.Commits = rig.Commits().Sub(c0)
	return res, firstErr
}
