package e2e

// The allow path over HTTP against chiod replicas on PostgreSQL, database
// included, everything on this machine (client too):
//
//	go test ./internal/e2e -run '^$' -bench Replicas -benchtime 20000x
//
// Calls are spread round-robin over the replicas, as a load balancer
// would. Figures are printed, never asserted.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/benchload"
	"github.com/chiokernel/chio/kernel"
)

func BenchmarkReplicasHTTP(b *testing.B) {
	srv := startPostgres(b)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			c := startCluster(b, srv, benchload.Policy, n)
			a := newAgent(b, c.node(0), "echo")
			bodies := make([][]byte, b.N)
			for i := range bodies {
				call := a.call(b, fmt.Sprintf("bench-%d-%d", n, i), "demo", "echo", `{"hello":"world"}`, "")
				bodies[i], _ = json.Marshal(call)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128}}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var failed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < 64; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						t0 := time.Now()
						req, _ := http.NewRequestWithContext(context.Background(), "POST", c.node(i).url+"/v1/calls", bytes.NewReader(bodies[i]))
						resp, err := client.Do(req)
						if err != nil {
							failed.Add(1)
							continue
						}
						var out kernel.Outcome
						data, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 || json.Unmarshal(data, &out) != nil || out.Status != kernel.StatusAllowed {
							failed.Add(1)
						}
						lat[i] = time.Since(t0)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if f := failed.Load(); f > 0 {
				b.Fatalf("%d of %d calls failed", f, b.N)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "calls/s")
			b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
			b.Logf("%d replicas over HTTP: %d calls in %s = %.0f calls/s; p50 %s, p99 %s (64 connections)", n, b.N,
				elapsed.Round(time.Millisecond), rate, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
		})
	}
}
