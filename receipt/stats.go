package receipt

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Group-by fields of receipt stats (SPEC §7 `chio receipt stats --group-by`).
// "metadata.KEY" groups by a metadata value.
var statsFields = []string{"decision", "guard", "tool_server", "tool_name", "subject"}

// LatencyKey is the metadata field stats summarize: how long a human (or the
// timeout) took to decide, on the final receipt of an approval chain.
const LatencyKey = "approval_latency_ms"

// Latency summarizes approval latency in milliseconds.
type Latency struct {
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
}

// StatsGroup is one group's count and latency (nil when no receipt in the
// group carries approval_latency_ms).
type StatsGroup struct {
	Key       string   `json:"key"`
	Count     uint64   `json:"count"`
	LatencyMs *Latency `json:"latency_ms"`
}

// StatsResult is GET /v1/receipts/stats' answer.
type StatsResult struct {
	Total   uint64       `json:"total"`
	GroupBy string       `json:"group_by,omitempty"`
	Groups  []StatsGroup `json:"groups"`
}

// Stats aggregates receipts.
type Stats struct {
	groupBy string
	total   uint64
	groups  map[string]*statsAcc
}

type statsAcc struct {
	count uint64
	lat   []float64
}

// NewStats returns an aggregator grouping by field ("" = one group, "all").
func NewStats(field string) (*Stats, error) {
	if field != "" && !strings.HasPrefix(field, "metadata.") {
		ok := false
		for _, f := range statsFields {
			ok = ok || f == field
		}
		if !ok {
			return nil, fmt.Errorf("group_by must be one of %s or metadata.KEY, got %q", strings.Join(statsFields, ", "), field)
		}
	}
	if field == "metadata." {
		return nil, fmt.Errorf("group_by metadata.KEY needs a key")
	}
	return &Stats{groupBy: field, groups: map[string]*statsAcc{}}, nil
}

func (s *Stats) key(r *Receipt) string {
	switch s.groupBy {
	case "":
		return "all"
	case "decision":
		return r.Decision.Verdict
	case "guard":
		return r.Decision.Guard
	case "tool_server":
		return r.ToolServer
	case "tool_name":
		return r.ToolName
	case "subject":
		return r.Subject
	}
	if v, ok := r.Metadata[strings.TrimPrefix(s.groupBy, "metadata.")]; ok {
		return MetaString(v)
	}
	return ""
}

// GroupBy is the field the stats group by.
func (s *Stats) GroupBy() string { return s.groupBy }

func (s *Stats) group(k string) *statsAcc {
	a := s.groups[k]
	if a == nil {
		a = &statsAcc{}
		s.groups[k] = a
	}
	return a
}

// Add counts r and its approval latency.
func (s *Stats) Add(r *Receipt) {
	s.Count(s.key(r), 1)
	s.AddLatency(r)
}

// Count adds n receipts to group key without their latency (a store that
// counts from its indexes calls this, then AddLatency for the receipts
// that carry a latency).
func (s *Stats) Count(key string, n uint64) {
	s.total += n
	s.group(key).count += n
}

// AddLatency records r's approval latency, if it has one, in r's group.
func (s *Stats) AddLatency(r *Receipt) {
	if ms, ok := number(r.Metadata[LatencyKey]); ok {
		a := s.group(s.key(r))
		a.lat = append(a.lat, ms)
	}
}

// number reads a metadata number whichever decoder produced it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n)
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

// Result returns the groups, largest first (ties by key).
func (s *Stats) Result() StatsResult {
	out := StatsResult{Total: s.total, GroupBy: s.groupBy, Groups: make([]StatsGroup, 0, len(s.groups))}
	for k, a := range s.groups {
		if a.count == 0 {
			continue
		}
		g := StatsGroup{Key: k, Count: a.count}
		if len(a.lat) > 0 {
			sort.Float64s(a.lat)
			sum := 0.0
			for _, x := range a.lat {
				sum += x
			}
			g.LatencyMs = &Latency{Avg: math.Round(sum/float64(len(a.lat))*10) / 10, P50: rank(a.lat, 0.50), P95: rank(a.lat, 0.95)}
		}
		out.Groups = append(out.Groups, g)
	}
	sort.Slice(out.Groups, func(i, j int) bool {
		gi, gj := out.Groups[i], out.Groups[j]
		return gi.Count > gj.Count || gi.Count == gj.Count && gi.Key < gj.Key
	})
	return out
}

// rank is the nearest-rank percentile of sorted xs.
func rank(xs []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
