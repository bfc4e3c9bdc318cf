package mcpgw

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/kernel"
)

// BenchmarkGatewayOverhead measures one allowed tools/call (echo on the
// reference server over stdio) four ways in the same run, interleaved so
// they see the same machine: straight to the upstream; kernel.Submit
// in-process (proof, guards, fsync'd receipt, upstream round trip);
// through chiod's /mcp with the client signing (session token + per-call
// proof); and through the bridge, as a desktop client does (client →
// bridge → /mcp → kernel → upstream). It prints median and p99 of each and
// the overhead over direct.
//
//	go test -run '^$' -bench GatewayOverhead -benchtime 500x ./internal/mcpgw/
func BenchmarkGatewayOverhead(b *testing.B) {
	w := newGatewayWorld(b)
	ctx := context.Background()

	direct, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcpsdk.CommandTransport{Command: exec.Command(mcptest.EverythingStdio(b)[0], mcptest.EverythingStdio(b)[1:]...)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	token, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), MaxSessionTTL)
	if err != nil {
		b.Fatal(err)
	}
	signed, err := w.direct(token)
	if err != nil {
		b.Fatal(err)
	}
	defer signed.Close()
	bridged := w.bridge(b)

	args := map[string]any{"message": "bench"}
	ph, _ := kernel.ParameterHash("everything", "echo", []byte(`{"message":"bench"}`), nil)
	paths := []struct {
		name string
		call func() error
	}{
		{"direct", func() error {
			_, err := direct.CallTool(ctx, &mcpsdk.CallToolParams{Name: "echo", Arguments: args})
			return err
		}},
		// The kernel alone, in-process: proof, guards, fsync'd receipt,
		// upstream round trip; what is left of the others is MCP and HTTP.
		{"kernel", func() error {
			c := w.CallAs(b, w.Agent, w.CapRaw, "everything", "echo", `{"message":"bench"}`, "")
			out, err := w.Kernel.Submit(ctx, c)
			if err == nil && out.Status != kernel.StatusAllowed {
				b.Fatalf("kernel: %+v", out)
			}
			return err
		}},
		{"mcp_signed", func() error {
			id := w.NextRequestID()
			p, err := kernel.SignProof(w.Agent, id, w.Cap.ID, "everything", "echo", ph, time.Now())
			if err != nil {
				return err
			}
			r, err := signed.CallTool(ctx, &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: args,
				Meta: mcpsdk.Meta{MetaProof: CallProof{RequestID: id, IssuedAt: p.IssuedAt, Signature: p.Signature}}})
			if err == nil && r.IsError {
				b.Fatalf("signed call refused: %v", r.Meta)
			}
			return err
		}},
		{"bridge", func() error {
			r, err := bridged.CallTool(ctx, &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: args})
			if err == nil && r.IsError {
				b.Fatalf("bridged call refused: %v", r.Meta)
			}
			return err
		}},
	}
	for _, p := range paths { // warm up connections and caches
		for range 20 {
			if err := p.call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	lat := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for range b.N {
		for i, p := range paths {
			start := time.Now()
			if err := p.call(); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, f float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(f*float64(len(s))))]
	}
	base50, base99 := q(lat[0], 0.5), q(lat[0], 0.99)
	for i, p := range paths {
		p50, p99 := q(lat[i], 0.5), q(lat[i], 0.99)
		b.ReportMetric(float64(p50.Microseconds()), p.name+"_p50_µs")
		b.ReportMetric(float64(p99.Microseconds()), p.name+"_p99_µs")
		if i > 0 {
			b.Logf("%-10s p50 %7s  p99 %7s  overhead over direct: p50 +%s, p99 +%s (n=%d)", p.name, p50, p99, p50-base50, p99-base99, len(lat[i]))
		} else {
			b.Logf("%-10s p50 %7s  p99 %7s (n=%d)", p.name, p50, p99, len(lat[i]))
		}
	}
}

// BenchmarkGatewayAllowThroughput is allowed tools/calls per second through
// the bridge and /mcp with 64 concurrent callers (each call: proof, guards,
// one fsync'd receipt in a group commit, one upstream round trip), and, in
// the same run for comparison, kernel.Submit alone with 64 callers on the
// same upstream.
//
//	go test -run '^$' -bench GatewayAllowThroughput -benchtime 4000x ./internal/mcpgw/
func BenchmarkGatewayAllowThroughput(b *testing.B) {
	w := newGatewayWorld(b)
	cs := w.bridge(b)
	ctx := context.Background()
	const callers = 64
	run := func(n int, call func() error) float64 {
		work := make(chan struct{}, n)
		for range n {
			work <- struct{}{}
		}
		close(work)
		var wg sync.WaitGroup
		start := time.Now()
		for range callers {
			wg.Go(func() {
				for range work {
					if err := call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	viaGateway := func() error {
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "throughput"}})
		if err == nil && r.IsError {
			err = fmt.Errorf("refused: %v", r.Meta)
		}
		return err
	}
	kernelOnly := func() error {
		out, err := w.Kernel.Submit(ctx, w.CallAs(b, w.Agent, w.CapRaw, "everything", "echo", `{"message":"throughput"}`, ""))
		if err == nil && out.Status != kernel.StatusAllowed {
			err = fmt.Errorf("kernel: %+v", out)
		}
		return err
	}
	run(100, viaGateway) // warm up
	b.ResetTimer()
	gw := run(b.N, viaGateway)
	b.StopTimer()
	k := run(b.N, kernelOnly)
	b.ReportMetric(gw, "calls/s")
	b.ReportMetric(k, "kernel_calls/s")
	b.Logf("%d allowed calls, %d callers: gateway %.0f calls/s, kernel.Submit alone %.0f calls/s (%.0f%%)", b.N, callers, gw, k, 100*gw/k)
}
