package kernel

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// pathGuardAlloc is the bytes the forbidden_paths guard allocates
// (decoding included) judging args on a fresh request. Memory allocated
// stands in for work done: unlike time, it does not depend on the machine
// or its load, so the test is deterministic.
//
// TotalAlloc also counts what other goroutines allocate meanwhile (the
// background work of kernels earlier tests left running), which only adds:
// the least of several runs is the guard's own. The measuring runs on one
// P, so those goroutines run only when the guard is preempted: under the
// whole suite with -race, five runs on every P each caught ~200 KB of
// theirs and failed the test.
func pathGuardAlloc(t *testing.T, args string) uint64 {
	t.Helper()
	g := grantWith(benchPathConstraints(true))
	// No collection while measuring: a GC empties sync.Pools (the JSON
	// decoder's buffers), and on a loaded machine one can land inside
	// every run, counting the pools' refill as the guard's allocation.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.GC()
	least := uint64(1<<64 - 1)
	for range 9 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := checkForbiddenPaths(req(g, args, nil))
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// The path guard's cost grew with the square of some arguments' size: a
// path of repeated /proc/<pid>/root aliases was split, joined and cleaned
// again at each alias, and every path-like string under a long object key
// spelled out its whole location. 250 KB of either kept the guard busy
// 12–20 s (the 50 ms budget is checked only after the guard returns). Four
// times the arguments may now cost at most about four times the work
// (allowing for the rounding of allocations: 8), and no shape more than maxPathGuardAllocPerByte
// bytes per byte; the benchmarks (BenchmarkForbiddenPaths) give the times.
func TestPathGuardCostIsLinear(t *testing.T) {
	small, large := pathShapes(16<<10), pathShapes(64<<10)
	for i, s := range large {
		a, b := pathGuardAlloc(t, small[i].args), pathGuardAlloc(t, s.args)
		growth := float64(b) / float64(a) * float64(len(small[i].args)) / float64(len(s.args)) * 4
		t.Logf("%-26s %6d bytes: %6.1f bytes allocated per byte; 4x the size, %4.1fx the allocation",
			s.name, len(s.args), float64(b)/float64(len(s.args)), growth)
		if growth > 8 || b > uint64(maxPathGuardAllocPerByte*len(s.args)) {
			t.Errorf("%s: %d bytes of arguments cost %d bytes of allocation, %.1fx as much as a quarter of them",
				s.name, len(s.args), b, growth)
		}
	}
}

// maxPathGuardAllocPerByte bounds what each byte of arguments may cost
// the guard (decoding them included).
const maxPathGuardAllocPerByte = 200
