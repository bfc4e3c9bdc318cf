package approval

import (
	"testing"
	"time"
)

// BenchmarkVerifyToken: every check of Verify, parallel on all cores.
func BenchmarkVerifyToken(b *testing.B) {
	req := pending()
	tok := NewToken(req, alice.Public(), DecisionApproved, t0, 10*time.Minute)
	raw, _ := tok.Sign(alice)
	at := t0.Add(time.Minute)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Verify(raw, req, at, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "verifications/s")
}
