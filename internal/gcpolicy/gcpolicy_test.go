package gcpolicy

import (
	"runtime/debug"
	"testing"
)

// The target is applied unless the operator set GOGC, in which case the
// runtime's own target stays; restore puts back what was there before.
func TestApplyRespectsGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	got, restore := Apply(func(string) string { return "" })
	if got != Percent {
		t.Fatalf("Apply returned %d, want %d", got, Percent)
	}
	if now := debug.SetGCPercent(Percent); now != Percent {
		t.Fatalf("GC percent %d, want %d", now, Percent)
	}
	restore()
	if now := debug.SetGCPercent(100); now != 100 {
		t.Fatalf("restore left %d, want 100", now)
	}

	debug.SetGCPercent(250) // as if GOGC=250 had been read at start-up
	gogc := func(k string) string {
		if k == "GOGC" {
			return "250"
		}
		return ""
	}
	got, restore = Apply(gogc)
	if got != 250 {
		t.Fatalf("with GOGC=250 Apply returned %d", got)
	}
	if now := debug.SetGCPercent(250); now != 250 {
		t.Fatalf("GOGC=250 was overridden: %d", now)
	}
	restore()
	if now := debug.SetGCPercent(100); now != 250 {
		t.Fatalf("restore left %d, want 250", now)
	}
}
