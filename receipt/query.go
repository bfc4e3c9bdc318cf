package receipt

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MetaFilter matches a metadata key, and its value when HasValue.
type MetaFilter struct {
	Key      string
	Value    string
	HasValue bool
}

// ParseMeta parses `KEY` or `KEY=VALUE` (the CLI's --meta).
func ParseMeta(s string) (MetaFilter, error) {
	k, v, has := strings.Cut(s, "=")
	if k == "" {
		return MetaFilter{}, fmt.Errorf("--meta needs KEY or KEY=VALUE, got %q", s)
	}
	return MetaFilter{Key: k, Value: v, HasValue: has}, nil
}

// String is the inverse of ParseMeta.
func (m MetaFilter) String() string {
	if m.HasValue {
		return m.Key + "=" + m.Value
	}
	return m.Key
}

// Filter selects receipts; zero fields match everything.
type Filter struct {
	Decision  string
	Guard     string
	Server    string
	Tool      string
	Subject   string
	RequestID string
	Meta      []MetaFilter
	Since     int64 // unix ms, inclusive; 0 = unbounded
	Until     int64 // unix ms, exclusive; 0 = unbounded
}

// Match reports whether r passes every set field of f.
func (f *Filter) Match(r *Receipt) bool {
	if f.Decision != "" && r.Decision.Verdict != f.Decision ||
		f.Guard != "" && r.Decision.Guard != f.Guard ||
		f.Server != "" && r.ToolServer != f.Server ||
		f.Tool != "" && r.ToolName != f.Tool ||
		f.Subject != "" && r.Subject != f.Subject ||
		f.RequestID != "" && r.RequestID != f.RequestID ||
		f.Since != 0 && r.Timestamp < f.Since ||
		f.Until != 0 && r.Timestamp >= f.Until {
		return false
	}
	for _, m := range f.Meta {
		v, ok := r.Metadata[m.Key]
		if !ok || m.HasValue && MetaString(v) != m.Value {
			return false
		}
	}
	return true
}

// MetaString renders a metadata value for comparison and display: strings
// as themselves, everything else as its JSON text (true, 450, …).
func MetaString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// maxDays is the most days a time.Duration holds.
const maxDays = int(math.MaxInt64 / int64(24*time.Hour))

// ParseTimeBound accepts a duration back from now ("24h", "90m") or an
// RFC 3339 time, and returns unix ms.
func ParseTimeBound(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("time bound %q: duration must be positive", s)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok { // "7d": days are what auditors type
		// The whole of it is the number (Sscanf("%dd") ignored the rest:
		// "1d7d" was one day), and it must fit a time.Duration, as
		// ParseDuration's hours must: multiplied unchecked, 200000d
		// wrapped round to a time decades ahead and matched nothing.
		n, err := strconv.Atoi(days)
		if err == nil && n > maxDays {
			return 0, fmt.Errorf("time bound %q: at most %dd", s, maxDays)
		}
		if err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour).UnixMilli(), nil
		}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("time bound %q: want a duration like 24h or an RFC 3339 time", s)
	}
	// Receipts are stamped in whole milliseconds: a finer bound cut to its
	// millisecond would move a since bound earlier, taking in a receipt
	// from before the window asked for, so it is refused, never moved.
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return 0, fmt.Errorf("time bound %q: finer than a millisecond; receipts are stamped in whole milliseconds, give at most 3 fractional digits", s)
	}
	return t.UnixMilli(), nil
}
