package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("bench", "load-test a chiod over HTTP (admin token needed to issue a capability)", runBench)
}

// runBench drives POST /v1/calls with fresh signed calls. With --rate it is
// open-loop: requests are scheduled at a fixed rate and latency is measured
// from the scheduled time, so a slow server cannot hide its queueing.
func runBench(e *Env, args []string) int {
	fs := newFlags(e, "bench")
	r := addRemote(fs, e)
	duration := fs.Duration("duration", 10*time.Second, "how long to send")
	conc := fs.Int("concurrency", 32, "concurrent connections")
	rate := fs.Int("rate", 0, "offered calls/s (open loop); 0 = as fast as possible (closed loop)")
	server := fs.String("server", "demo", "tool server")
	tool := fs.String("tool", "echo", "tool")
	grant := fs.String("grant", "echo", "grant to issue the bench capability for")
	if _, err := parse(fs, args); err != nil {
		return ExitUsage
	}
	if *conc < 1 || *duration <= 0 || *rate < 0 {
		return fail(e, usageError("--concurrency ≥ 1, --duration > 0, --rate ≥ 0"))
	}
	key, err := keys.Generate(rand.Reader)
	if err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	var capResp struct {
		ID         string          `json:"id"`
		Capability json.RawMessage `json:"capability"`
	}
	_, err = r.do(ctx, "POST", "/v1/capabilities", map[string]any{"subject": key.Public().String(), "grants": []string{*grant}, "ttl": "1h"}, &capResp, 201)
	cancel()
	if err != nil {
		return fail(e, err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: *conc * 2, MaxIdleConnsPerHost: *conc * 2}}
	args0 := json.RawMessage(`{"bench":true}`)
	ph, _ := kernel.ParameterHash(*server, *tool, args0, nil)
	var seq atomic.Int64
	prefix := kernel.NewID("bench-")
	one := func(ctx context.Context) (int, error) {
		id := prefix + "-" + strconv.FormatInt(seq.Add(1), 10)
		proof, err := kernel.SignProof(key, id, capResp.ID, *server, *tool, ph, time.Now())
		if err != nil {
			return 0, err
		}
		b, _ := json.Marshal(kernel.ToolCall{RequestID: id, Capability: capResp.Capability, Server: *server, Tool: *tool, Arguments: args0, Proof: proof})
		req, _ := http.NewRequestWithContext(ctx, "POST", r.base()+"/v1/calls", bytes.NewReader(b))
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
	runCtx, stop := context.WithTimeout(context.Background(), *duration)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	if *rate == 0 {
		for w := 0; w < *conc; w++ {
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
		slots := make(chan time.Time, *conc*4)
		for w := 0; w < *conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for at := range slots {
					code, err := one(context.Background())
					record(time.Since(at), code, err)
				}
			}()
		}
		interval := time.Second / time.Duration(*rate)
		for next := start; runCtx.Err() == nil; next = next.Add(interval) {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			slots <- next
		}
		close(slots)
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	fmt.Fprintf(e.Stdout, "calls: %d in %s (%.0f calls/s), errors: %d, statuses: %v\n", len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(), errs, statuses)
	fmt.Fprintf(e.Stdout, "latency: p50 %s  p95 %s  p99 %s  max %s\n", pct(.50), pct(.95), pct(.99), pct(1))
	if errs > 0 || statuses[200] != len(lat) {
		return ExitError
	}
	return ExitOK
}
