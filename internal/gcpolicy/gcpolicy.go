// Package gcpolicy is chiod's garbage-collection target. The in-process
// benchmarks (`go test -bench` in kernel/, `chio bench --in-process`) apply
// it too, so that they measure the kernel as chiod runs it.
package gcpolicy

import "runtime/debug"

// Percent is chiod's garbage-collection target unless GOGC is set. chiod's
// live heap is small (tens of MiB) and every call allocates: a target of
// 400% instead of Go's 100% cut the GC's share of the CPU enough for +10%
// HTTP throughput and a lower p99 (docs/ARCHITECTURE.md, Performance), for
// a higher peak (the stream flood test: 82 MiB instead of 51). GOGC=100
// trades that back; GOMEMLIMIT bounds the heap either way.
const Percent = 400

// Apply sets Percent unless the operator set GOGC (read through getenv),
// in which case the runtime keeps what GOGC gave it. It returns the target
// now in force (-1: GOGC=off) and a function that puts back the one before.
func Apply(getenv func(string) string) (percent int, restore func()) {
	prev := debug.SetGCPercent(Percent)
	restore = func() { debug.SetGCPercent(prev) }
	if getenv("GOGC") != "" {
		debug.SetGCPercent(prev)
		return prev, restore
	}
	return Percent, restore
}
