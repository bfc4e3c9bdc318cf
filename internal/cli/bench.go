package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/benchload"
	"github.com/chiokernel/chio/internal/gcpolicy"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("bench", "measure the allow path: in process (--in-process) or a chiod over HTTP (admin token needed)", runBench)
}

// runBench measures decisions/s. --in-process runs the allow path and the
// raw sign-and-commit loop (the same workloads as BenchmarkAllowPath and
// BenchmarkRawSignCommit) in this process, alternating, and prints their
// ratio. Otherwise it drives a chiod's POST /v1/calls with fresh signed
// calls; with --rate it is open-loop: requests are scheduled at a fixed
// rate and latency is measured from the scheduled time, so a slow server
// cannot hide its queueing. --raw adds the raw loop, run in this process
// after the HTTP load (meaningful when chiod's data directory is on the
// same disk).
func runBench(e *Env, args []string) int {
	fs := newFlags(e, "bench")
	r := addRemote(fs, e)
	inProcess := fs.Bool("in-process", false, "run the allow path and the raw loop in this process (no chiod)")
	calls := fs.Int("calls", 40000, "in process: calls (and receipts) per round")
	rounds := fs.Int("rounds", 3, "in process: rounds of allow path + raw loop")
	dir := fs.String("dir", "", "in process: where the stores go (default a temporary directory: put it on the disk you measure)")
	noFsync := fs.Bool("no-fsync", false, "in process: turn the stores' fsyncs off (no deployment runs so: it shows the ceiling the CPU alone sets)")
	raw := fs.Bool("raw", false, "HTTP: also run the raw loop in this process, after the load, for the ratio")
	duration := fs.Duration("duration", 10*time.Second, "HTTP: how long to send")
	conc := fs.Int("concurrency", 0, "concurrent callers (0: 64 per core in process, 32 connections over HTTP)")
	rate := fs.Int("rate", 0, "HTTP: offered calls/s (open loop); 0 = as fast as possible (closed loop)")
	server := fs.String("server", "demo", "HTTP: tool server")
	tool := fs.String("tool", "echo", "HTTP: tool")
	grant := fs.String("grant", "echo", "HTTP: grant to issue the bench capability for")
	if _, err := parse(fs, args); err != nil {
		return ExitUsage
	}
	if *conc < 0 || *duration <= 0 || *rate < 0 || *calls < 1 || *rounds < 1 {
		return fail(e, usageError("--concurrency ≥ 0, --duration > 0, --rate ≥ 0, --calls ≥ 1, --rounds ≥ 1"))
	}
	if *inProcess {
		if *conc == 0 {
			*conc = 64 * runtime.GOMAXPROCS(0)
		}
		return benchInProcess(e, *dir, *calls, *rounds, *conc, benchload.Options{NoFsync: *noFsync})
	}
	if *conc == 0 {
		*conc = 32
	}
	return benchHTTP(e, r, httpBench{duration: *duration, conc: *conc, rate: *rate, server: *server, tool: *tool,
		grant: *grant, raw: *raw, rawCalls: *calls, dir: *dir})
}

// benchInProcess alternates the allow path and the raw loop, each on a
// fresh store, and prints every round and the medians' ratio.
func benchInProcess(e *Env, dir string, n, rounds, conc int, o benchload.Options) int {
	if dir == "" {
		d, err := os.MkdirTemp("", "chio-bench-")
		if err != nil {
			return fail(e, err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	// The kernel is measured as chiod runs it: with chiod's GC target.
	gc, restore := gcpolicy.Apply(e.Getenv)
	defer restore()
	fmt.Fprintf(e.Stdout, "in process: GOMAXPROCS %d, GC target %d%%, %d callers, %d calls per round, stores in %s\n", runtime.GOMAXPROCS(0), gc, conc, n, dir)
	if o.NoFsync {
		fmt.Fprintln(e.Stdout, "fsync OFF in both workloads: a ceiling set by the CPU alone, not a deployment figure")
	}
	var allow, rawRates []float64
	for i := range rounds {
		a, err := benchAllowRound(dir, n, conc, i, o)
		if err != nil {
			return fail(e, err)
		}
		w, err := benchRawRound(dir, n, conc, i, o)
		if err != nil {
			return fail(e, err)
		}
		allow, rawRates = append(allow, a.Rate()), append(rawRates, w.Rate())
		fmt.Fprintf(e.Stdout, "round %d: allow path %s decisions/s (%s CPU/decision, %.0f calls/commit); raw sign+commit %s receipts/s (%s CPU/receipt, %.0f calls/commit); ratio %.0f%%\n",
			i+1, thousands(a.Rate()), micro(a.CPUPerOp()), a.CallsPerCommit(), thousands(w.Rate()), micro(w.CPUPerOp()), w.CallsPerCommit(), 100*a.Rate()/w.Rate())
		fmt.Fprintf(e.Stdout, "  allow path: %s\n  raw loop:   %s\n", a.Commits.Cycle(), w.Commits.Cycle())
	}
	ma, mr := median(allow), median(rawRates)
	fmt.Fprintf(e.Stdout, "median: allow path %s decisions/s, raw loop %s receipts/s: %.0f%% of the raw loop\n", thousands(ma), thousands(mr), 100*ma/mr)
	return ExitOK
}

func benchAllowRound(dir string, n, conc, i int, o benchload.Options) (benchload.Result, error) {
	return benchRound(dir, "allow path", func(d string) (benchload.Rig, error) { return benchload.NewAllowRig(d, n, o) }, n, conc, i)
}

func benchRawRound(dir string, n, conc, i int, o benchload.Options) (benchload.Result, error) {
	return benchRound(dir, "raw loop", func(d string) (benchload.Rig, error) { return benchload.NewRawRig(d, o) }, n, conc, i)
}

// benchRound runs round i of one workload on a fresh store in dir.
func benchRound(dir, name string, open func(dir string) (benchload.Rig, error), n, conc, i int) (benchload.Result, error) {
	d, err := os.MkdirTemp(dir, "bench-")
	if err != nil {
		return benchload.Result{}, err
	}
	defer os.RemoveAll(d)
	rig, err := open(d)
	if err != nil {
		return benchload.Result{}, err
	}
	defer rig.Close()
	res, err := benchload.Run(context.Background(), rig, n, conc)
	if err != nil {
		return res, fmt.Errorf("%s, round %d: %w", name, i+1, err)
	}
	return res, nil
}

type httpBench struct {
	duration     time.Duration
	conc, rate   int
	server, tool string
	grant, dir   string
	raw          bool
	rawCalls     int
}

// benchHTTP drives POST /v1/calls.
func benchHTTP(e *Env, r *remote, o httpBench) int {
	key, err := keys.Generate(rand.Reader)
	if err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	var capResp struct {
		ID         string          `json:"id"`
		Capability json.RawMessage `json:"capability"`
	}
	_, err = r.do(ctx, "POST", "/v1/capabilities", map[string]any{"subject": key.Public().String(), "grants": []string{o.grant}, "ttl": "1h"}, &capResp, 201)
	cancel()
	if err != nil {
		return fail(e, err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: o.conc * 2, MaxIdleConnsPerHost: o.conc * 2}}
	body := newCallBody(key, capResp.Capability, capResp.ID, o.server, o.tool)
	url := r.base() + "/v1/calls"
	one := func(ctx context.Context) (int, error) {
		// Request ids as the SDKs make them: a UUIDv7 each, ascending.
		b, err := body.build(kernel.NewID("bench-"), time.Now())
		if err != nil {
			return 0, err
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(string(b)))
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	var mu sync.Mutex
	var lat []time.Duration
	statuses := map[int]int{}
	errs := 0
	record := func(d time.Duration, code int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			return
		}
		statuses[code]++
		lat = append(lat, d)
	}
	// chiod's own view of its commits, read before and after (left out,
	// with a note, where /metrics cannot be read).
	mctx, mcancel := ctxTimeout(10 * time.Second)
	before, merr := readCommitter(mctx, r)
	mcancel()
	runCtx, stop := context.WithTimeout(context.Background(), o.duration)
	defer stop()
	cpu0, start := benchload.ProcessCPU(), time.Now()
	var wg sync.WaitGroup
	if o.rate == 0 {
		for range o.conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for runCtx.Err() == nil {
					t0 := time.Now()
					code, err := one(context.Background())
					record(time.Since(t0), code, err)
				}
			}()
		}
	} else {
		slots := make(chan time.Time, o.conc*4)
		for range o.conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for at := range slots {
					code, err := one(context.Background())
					record(time.Since(at), code, err)
				}
			}()
		}
		interval := time.Second / time.Duration(o.rate)
		for next := start; runCtx.Err() == nil; next = next.Add(interval) {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			slots <- next
		}
		close(slots)
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), benchload.ProcessCPU()-cpu0
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	httpRate := float64(len(lat)) / elapsed.Seconds()
	mode := "closed loop"
	if o.rate > 0 {
		mode = fmt.Sprintf("open loop at %d calls/s offered", o.rate)
	}
	fmt.Fprintf(e.Stdout, "HTTP, %s, %d connections: %d calls in %s (%s calls/s), errors: %d, statuses: %v\n",
		mode, o.conc, len(lat), elapsed.Round(time.Millisecond), thousands(httpRate), errs, statuses)
	fmt.Fprintf(e.Stdout, "latency: p50 %s  p95 %s  p99 %s  max %s\n", pct(.50), pct(.95), pct(.99), pct(1))
	if len(lat) > 0 {
		fmt.Fprintf(e.Stdout, "load generator CPU: %s per call\n", micro(cpu/time.Duration(len(lat))))
	}
	if merr == nil {
		mctx, mcancel := ctxTimeout(10 * time.Second)
		var after committer
		after, merr = readCommitter(mctx, r)
		mcancel()
		if merr == nil {
			fmt.Fprintln(e.Stdout, after.describe(before, elapsed))
		}
	}
	if merr != nil {
		fmt.Fprintf(e.Stdout, "chiod's committer: not shown (%s)\n", shown(merr.Error())) // may quote chiod
	}
	if errs > 0 || statuses[200] != len(lat) {
		return ExitError
	}
	if o.raw {
		// The round's store goes in a temporary directory under o.dir (or
		// the system's), removed afterwards.
		w, err := benchRawRound(o.dir, o.rawCalls, 64*runtime.GOMAXPROCS(0), 0, benchload.Options{})
		if err != nil {
			return fail(e, err)
		}
		fmt.Fprintf(e.Stdout, "raw sign+commit in this process: %s receipts/s; HTTP is %.0f%% of it\n", thousands(w.Rate()), 100*httpRate/w.Rate())
	}
	return ExitOK
}

// callBody writes POST /v1/calls bodies for one agent, capability and tool
// with fresh request ids and proofs, without a JSON encoder per call: the
// load generator shares the cores it measures.
type callBody struct {
	key                 keys.PrivateKey
	capID, server, tool string
	paramHash           string
	head                []byte // {"capability":…,"server":…,"tool":…,"arguments":…,
}

func newCallBody(key keys.PrivateKey, capRaw json.RawMessage, capID, server, tool string) *callBody {
	args := json.RawMessage(`{"bench":true}`)
	ph, _ := kernel.ParameterHash(server, tool, args, nil)
	head, _ := json.Marshal(struct {
		Capability json.RawMessage `json:"capability"`
		Server     string          `json:"server"`
		Tool       string          `json:"tool"`
		Arguments  json.RawMessage `json:"arguments"`
	}{capRaw, server, tool, args})
	return &callBody{key: key, capID: capID, server: server, tool: tool, paramHash: ph, head: head[:len(head)-1]}
}

// build signs the call's proof at `at` and returns the body.
func (c *callBody) build(requestID string, at time.Time) ([]byte, error) {
	p, err := kernel.SignProof(c.key, requestID, c.capID, c.server, c.tool, c.paramHash, at)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(c.head)+len(requestID)+200)
	b = append(b, c.head...)
	b = append(b, `,"request_id":`...)
	b, _ = jsontext.AppendQuote(b, requestID)
	b = append(b, `,"proof":{"issued_at":`...)
	b = strconv.AppendInt(b, p.IssuedAt, 10)
	b = append(b, `,"signature":"`...)
	b = append(b, p.Signature...)
	return append(b, `"}}`...), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

// thousands prints a rate rounded to units with thousands separators.
func thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func micro(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1e3) }
