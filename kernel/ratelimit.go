package kernel

import (
	"sync"
	"time"
)

// rateWindow counts calls per key over a sliding minute. It is in memory;
// at start-up Recover counts the last minute's calls in it again from the
// store (ratelimit_rebuild.go), so a restart gives no fresh allowance.
type rateWindow struct {
	mu   sync.Mutex
	hits map[string][]time.Time
	// pruneAt is the key count at which the next scan for idle keys runs:
	// twice what a scan left (at least minPruneAt), so that when every
	// key is live the scans are paid for by the keys added since, not run
	// on every call. scans counts them (tests).
	pruneAt int
	scans   int
}

// minPruneAt bounds the keys kept before idle ones are dropped.
const minPruneAt = 1 << 16

func newRateWindow() *rateWindow {
	return &rateWindow{hits: map[string][]time.Time{}, pruneAt: minPruneAt}
}

// hit records a call at now and returns how many calls (this one included)
// fall in the last minute. A hit keeps at most max+1 timestamps per key,
// but never drops more than the one it adds: a reload that lowers max for
// a moment must not forget the minute's earlier calls, or restoring it
// would give the agent a fresh allowance within the minute.
func (w *rateWindow) hit(key string, now time.Time, max int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	ts := w.hits[key]
	cut := 0
	for cut < len(ts) && !ts[cut].After(now.Add(-time.Minute)) {
		cut++
	}
	ts = append(ts[cut:], now)
	if len(ts) > max+1 {
		ts = ts[1:]
	}
	w.hits[key] = ts
	if len(w.hits) > w.pruneAt { // bound memory: drop idle keys
		w.scans++
		for k, v := range w.hits {
			if len(v) == 0 || !v[len(v)-1].After(now.Add(-time.Minute)) {
				delete(w.hits, k)
			}
		}
		w.pruneAt = 2 * len(w.hits)
		if w.pruneAt < minPruneAt {
			w.pruneAt = minPruneAt
		}
	}
	return len(ts)
}

// decisionRate is one new call's hit on max_calls_per_minute, kept across
// the times decide judges the call (again after a reload): recording the
// hit again would count the call twice and deny an agent's last call of
// the minute. A reload that changes the grant or its limit is counted
// afresh (at worst the call counts twice: toward a deny, never an allow
// over the limit).
type decisionRate struct {
	key     string
	limit   int
	n       int
	counted bool
}

// recentCalls is Kernel.recentCalls, recorded at most once per key and
// limit for this call.
func (d *decisionRate) recentCalls(k *Kernel, key string, now time.Time, limit int) int {
	if d.counted && d.key == key && d.limit == limit {
		return d.n
	}
	d.key, d.limit, d.n, d.counted = key, limit, k.recentCalls(key, now, limit), true
	return d.n
}
