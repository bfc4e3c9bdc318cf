package gcpolicy

import (
	"runtime/debug"
	"testing"
)

// The target is applied unless the operator set GOGC.
func TestApplyRespectsGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if got := Apply(func(string) string { return "" }); got != Percent {
		t.Fatalf("Apply returned %d, want %d", got, Percent)
	}
	if got := debug.SetGCPercent(100); got != Percent {
		t.Fatalf("GC percent %d, want %d", got, Percent)
	}
	gogc := func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}
	if got := Apply(gogc); got != 100 {
		t.Fatalf("with GOGC=100 Apply returned %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC=100 was overridden: %d", got)
	}
}
