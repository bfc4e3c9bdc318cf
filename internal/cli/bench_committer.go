package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// committer is what chiod's /metrics says of its group commits so far.
type committer struct {
	commits, calls, seconds float64
	phases                  map[string]float64 // bbolt only: chio_commit_phase_seconds_total by phase
}

// maxMetricsBody bounds what the bench reads of /metrics.
const maxMetricsBody = 4 << 20

// readCommitter reads chiod's commit counters from /metrics (with the
// token the bench already uses).
func readCommitter(ctx context.Context, r *remote) (committer, error) {
	body, err := r.stream(ctx, "/metrics")
	if err != nil {
		return committer{}, err
	}
	defer body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(body, maxMetricsBody))
	if err != nil {
		return committer{}, fmt.Errorf("/metrics: %w", err)
	}
	var c committer
	if f := fams["chio_commit_seconds"]; f != nil && len(f.Metric) == 1 && f.Metric[0].Histogram != nil {
		c.commits, c.seconds = float64(f.Metric[0].Histogram.GetSampleCount()), f.Metric[0].Histogram.GetSampleSum()
	} else {
		return committer{}, fmt.Errorf("/metrics has no chio_commit_seconds")
	}
	if f := fams["chio_commit_batch_size"]; f != nil && len(f.Metric) == 1 && f.Metric[0].Histogram != nil {
		c.calls = f.Metric[0].Histogram.GetSampleSum()
	}
	if f := fams["chio_commit_phase_seconds_total"]; f != nil {
		c.phases = map[string]float64{}
		for _, m := range f.Metric {
			c.phases[label(m, "phase")] = m.GetCounter().GetValue()
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// describe says what the committer did between before and c, over a run
// of length d: how often it committed, how full, how busy, and (bbolt)
// where a commit's time went.
func (c committer) describe(before committer, d time.Duration) string {
	n := c.commits - before.commits
	if n <= 0 {
		return "chiod's committer: /metrics counted no commits during the run"
	}
	busy := (c.seconds - before.seconds) / d.Seconds()
	s := fmt.Sprintf("chiod's committer: %s commits of %.1f calls, %.2f ms each, busy %.0f%% of the run",
		thousands(n), (c.calls-before.calls)/n, 1e3*(c.seconds-before.seconds)/n, 100*busy)
	if c.phases != nil { // before.phases is nil if nothing was committed yet: zeros
		ms := func(p string) float64 { return 1e3 * (c.phases[p] - before.phases[p]) / n }
		s += fmt.Sprintf(" (run %.2f, sign %.2f, receipts %.2f, write+fsync %.2f ms)", ms("run"), ms("sign"), ms("receipts"), ms("write"))
	}
	return s
}
