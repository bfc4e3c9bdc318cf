package httpapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chiokernel/chio/kernel"
)

// Metrics are chiod's Prometheus series, on their own registry so tests and
// several servers in one process never collide.
type Metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	latency    prometheus.Histogram
	batchSize  prometheus.Histogram
	commitTime prometheus.Histogram
	// commitPhases adds up where the bbolt committer's time went.
	commitPhases *prometheus.CounterVec
	Notify       *prometheus.CounterVec
	// streamsRefused counts refused SSE streams by reason: "credential"
	// (its share is taken, 429) or "global" (every stream slot is, 503).
	streamsRefused *prometheus.CounterVec
}

// NewMetrics registers the series; queueDepth (may be nil) is sampled on scrape.
func NewMetrics(queueDepth func() float64) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_decisions_total", Help: "Decisions by verdict.",
		}, []string{"verdict"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chio_decision_seconds", Help: "Submit latency, receipt durable.",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .025, .05, .1, .5, 1, 5},
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chio_commit_batch_size", Help: "Update calls per group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chio_commit_seconds", Help: "Group commit duration including fsync.",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .05, .1, 1},
		}),
		commitPhases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_commit_phase_seconds_total",
			Help: "bbolt group commits' time by phase: run (the calls' reads and writes), sign (receipt signatures), receipts (receipts, leaves, index entries), write (page writes and fsyncs).",
		}, []string{"phase"}),
		Notify: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_channel_notifications_total", Help: "Channel notifications by channel and result.",
		}, []string{"channel", "result"}),
		streamsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_streams_refused_total", Help: "Refused event streams: credential (its share is taken) or global (every slot is).",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.decisions, m.latency, m.batchSize, m.commitTime, m.commitPhases, m.Notify, m.streamsRefused,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	if queueDepth != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chio_commit_queue_depth", Help: "Update calls waiting for the committer.",
		}, queueDepth))
	}
	return m
}

// watchSubscribers samples the kernel's event subscribers per pool on
// scrape. A Metrics serves one kernel: a second registration is an error.
func (m *Metrics) watchSubscribers(k *kernel.Kernel) error {
	for _, p := range []struct {
		name string
		pool kernel.Pool
	}{{"stream", kernel.PoolStream}, {"wait", kernel.PoolWait}} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chio_event_subscribers", Help: "Open event subscribers: SSE streams (stream) and long-polls (wait).",
			ConstLabels: prometheus.Labels{"pool": p.name},
		}, func() float64 { return float64(k.Subscribers(p.pool)) })
		if err := m.reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}

// Decision implements kernel.Observer.
func (m *Metrics) Decision(verdict string, d time.Duration) {
	m.decisions.WithLabelValues(verdict).Inc()
	m.latency.Observe(d.Seconds())
}

// Commit records one group commit (wire to boltstore.Options.Observe).
func (m *Metrics) Commit(batch int, d time.Duration) {
	m.batchSize.Observe(float64(batch))
	m.commitTime.Observe(d.Seconds())
}

// CommitPhases records where one bbolt group commit's time went (wire to
// boltstore.Options.Observe).
func (m *Metrics) CommitPhases(run, sign, receipts, write time.Duration) {
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"run", run}, {"sign", sign}, {"receipts", receipts}, {"write", write}} {
		m.commitPhases.WithLabelValues(p.name).Add(p.d.Seconds())
	}
}

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
