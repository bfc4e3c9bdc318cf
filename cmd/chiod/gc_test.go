package main

import (
	"runtime/debug"
	"testing"
)

// chiod sets its GC target unless the operator set GOGC.
func TestTuneGCRespectsGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Fatalf("GC percent %d, want %d", got, GCPercent)
	}
	tuneGC(func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC=100 was overridden: %d", got)
	}
}
