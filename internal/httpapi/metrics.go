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

// Label values chiod counts under. Every labelled series is created at 0
// for each value it can take, so an alert or a dashboard reads 0 from the
// start rather than "no data" until the first count (and a misspelt series
// stays "no data"). Labels take values from these small fixed sets (and
// the configured channels' names), never ids.
var (
	// verdicts are the statuses a decision answers with (Decision).
	verdicts = []string{kernel.StatusAllowed, kernel.StatusDenied, kernel.StatusPendingApproval}
	// commitPhases are where a bbolt group commit's time goes (CommitPhases).
	commitPhases = []string{"run", "sign", "receipts", "write"}
)

// Reasons an SSE stream is refused (chio_streams_refused_total{reason}).
const (
	refusedCredential = "credential" // the credential's share of streams is taken: 429
	refusedGlobal     = "global"     // every stream slot is taken: 503
)

// NewMetrics registers the series; queueDepth (may be nil) is sampled on scrape.
func NewMetrics(queueDepth func() float64) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_decisions_total", Help: "Calls decided, by verdict: allowed, denied, pending_approval.",
		}, []string{"verdict"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chio_decision_seconds", Help: "A call's arrival to its answer, the decision durable (an allowed call's includes the tool's run).",
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
			Name: "chio_channel_notifications_total", Help: "Channel notifications by channel and result: ok, retry (will be retried), failed (given up or dropped).",
		}, []string{"channel", "result"}),
		streamsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chio_streams_refused_total", Help: "Refused event streams: credential (its share is taken) or global (every slot is).",
		}, []string{"reason"}),
	}
	for _, v := range verdicts {
		m.decisions.WithLabelValues(v)
	}
	for _, r := range []string{refusedCredential, refusedGlobal} {
		m.streamsRefused.WithLabelValues(r)
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

// ExpectCommitPhases creates chio_commit_phase_seconds_total at 0 for
// every phase. Call it only for a store that reports them (bbolt): with
// PostgreSQL the series stays absent rather than read as no time spent.
func (m *Metrics) ExpectCommitPhases() {
	for _, p := range commitPhases {
		m.commitPhases.WithLabelValues(p)
	}
}

// ExpectChannels creates chio_channel_notifications_total at 0 for every
// channel the hub serves (by name) and every result it reports.
func (m *Metrics) ExpectChannels(names, results []string) {
	for _, ch := range names {
		for _, r := range results {
			m.Notify.WithLabelValues(ch, r)
		}
	}
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
	for i, d := range []time.Duration{run, sign, receipts, write} { // commitPhases' order
		m.commitPhases.WithLabelValues(commitPhases[i]).Add(d.Seconds())
	}
}

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
