package policy

import (
	"strings"
	"testing"
)

// A call whose work grows with the length of a string argument (size(),
// int(), double(), timestamp(), ordering) was charged one unit, whatever the
// length: a comprehension over a short list that reads one long argument on
// every element did the work of thousands of such reads within the limit
// (`args.xs.exists(x, timestamp(args.note) > …)` over 2,500 elements and a
// 250 KB note kept one evaluation busy 3.4 s; the 50 ms guard budget is
// checked only after the guard returns). Each of these conditions reads a
// 200,000-byte string 1,000 times, 200 MB in all: the limit must stop it.
func TestConditionCostChargesStringLength(t *testing.T) {
	xs := make([]any, 1000)
	for i := range xs {
		xs[i] = int64(i)
	}
	note := strings.Repeat("0", 200_000) + "1"
	args := map[string]any{"xs": xs, "note": note}
	for _, expr := range []string{
		"args.xs.all(x, args.note.size() > 0)",
		"args.xs.all(x, int(args.note) == 1)",
		"args.xs.all(x, double(args.note) == 1.0)",
		"args.xs.all(x, args.note < '1')",
	} {
		got, err := evalCond(t, expr, args, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Errorf("%s over %d elements and a %d-byte note: %v, %v; want the cost limit exceeded", expr, len(xs), len(note), got, err)
		}
	}
	// One read of the longest string an argument may hold stays within it.
	one := map[string]any{"note": strings.Repeat("é", 128<<10)}
	for _, expr := range []string{"args.note.size() > 0", "args.note > 'a'", "args.note.startsWith('é')"} {
		if got, err := evalCond(t, expr, one, nil); err != nil || !got {
			t.Errorf("%s over a %d-byte note: %v, %v; want true", expr, len(one["note"].(string)), got, err)
		}
	}
}

// ==, != and `in` were charged by the number of elements at the top of
// their operands, yet the strict comparison (comparisons.go) walks lists of
// equal size and maps into their values: the usual check for repeats,
// `a != b && a.sku == b.sku` over every pair of items, walked each item's
// nested list for one unit, 400 times here (2 to 4 million values; 45 items kept
// one evaluation busy 0.4 to 1.5 s). The limit must stop both.
func TestConditionCostChargesNestedComparisons(t *testing.T) {
	ones := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = int64(1)
		}
		return l
	}
	items := make([]any, 20)
	for i := range items {
		items[i] = map[string]any{"sku": string(rune('a' + i)), "tags": ones(5000)}
	}
	big := map[string]any{"items": items, "a": []any{ones(20_000)}, "b": []any{ones(20_000)}}
	for _, expr := range []string{
		"args.items.exists(a, args.items.exists(b, a != b && a.sku == b.sku))",
		"args.a == args.b",
		"args.a != args.b",
		"args.a in [args.b]",
	} {
		got, err := evalCond(t, expr, big, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Errorf("%s: %v, %v; want the cost limit exceeded", expr, got, err)
		}
	}
	// Small nested values compare as before.
	small := map[string]any{"a": []any{ones(100)}, "b": []any{ones(100)},
		"items": []any{map[string]any{"sku": "a", "tags": ones(10)}, map[string]any{"sku": "b", "tags": ones(10)}}}
	for _, c := range []struct {
		expr string
		want bool
	}{
		{"args.a == args.b", true},
		{"args.a in [args.b]", true},
		{"args.items.exists(a, args.items.exists(b, a != b && a.sku == b.sku))", false},
	} {
		if got, err := evalCond(t, c.expr, small, nil); err != nil || got != c.want {
			t.Errorf("%s over small values: %v, %v; want %v", c.expr, got, err, c.want)
		}
	}
}

// matches() was charged after the regex ran, by the length of its pattern's
// text: `[a-z]{1,1000}x` (14 characters, a program of about 2,000
// instructions) cost 4 units per 10 bytes matched, and the work of running
// Go's regexp grows with the program. One `[a-z0-9._%+-]{1,64}@evil\.com`
// over a 250 KB argument ran 1.2 s, `[a-z]{1,1000}x` 24 s, and a pattern
// the arguments supply (`args.note.matches(args.pattern)`, 250 KB each) did
// not finish in 10 minutes, before the cost limit was found exceeded. The regex is charged by its program's size, and
// a call whose charge alone exceeds the limit is refused before it runs,
// saying so.
func TestConditionCostChargesRegexBeforeRunning(t *testing.T) {
	xs := make([]any, 40)
	for i := range xs {
		xs[i] = strings.Repeat("a", 400)
	}
	expr := "args.xs.exists(x, x.matches('[a-z]{1,1000}x'))"
	if got, err := evalCond(t, expr, map[string]any{"xs": xs}, nil); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("%s over %d strings of 400 bytes: %v, %v; want the cost limit exceeded", expr, len(xs), got, err)
	}
	note := map[string]any{"note": strings.Repeat("a", 250_000), "p": "(?i)drop\\s+table"}
	for _, expr := range []string{
		`args.note.matches('[a-z0-9._%+-]{1,64}@evil\\.com')`,
		`matches(args.note, '(?i)drop\\s+table')`,
		`args.note.matches(args.p)`,
	} {
		got, err := evalCond(t, expr, note, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") || !strings.Contains(err.Error(), "refused before it ran") {
			t.Errorf("%s over a 250000-byte note: %v, %v; want the cost limit exceeded, refused before it ran", expr, got, err)
		}
	}
	// Within the limit, matches() answers as before, constant pattern or not.
	short := map[string]any{"note": "please DROP  table users", "p": "(?i)drop\\s+table"}
	for _, expr := range []string{`args.note.matches('(?i)drop\\s+table')`, `matches(args.note, args.p)`, `!args.note.matches('^x')`} {
		if got, err := evalCond(t, expr, short, nil); err != nil || !got {
			t.Errorf("%s: %v, %v; want true", expr, got, err)
		}
	}
}

// A timestamp accessor given a time zone (getHours('America/New_York'),
// getDayOfWeek(args.tz), …) loads the zone from the system's zone files on
// every call, for one unit: a comprehension over a list of 2,000 elements
// read a zone file on each, about half a second of one evaluation (0.25
// ms a load against a few µs a unit; 32 such conditions per grant), all of
// it spent before the guard budget is checked. Each must be charged what
// it costs, so that 800 loads exceed the limit while one stays cheap.
func TestConditionCostChargesTimeZoneLoads(t *testing.T) {
	xs := make([]any, 800)
	for i := range xs {
		xs[i] = int64(i)
	}
	args := map[string]any{"xs": xs, "t": "2026-01-01T03:00:00Z", "tz": "America/New_York"}
	for _, expr := range []string{
		"args.xs.all(x, timestamp(args.t).getHours('America/New_York') >= 0)",
		"args.xs.all(x, timestamp(args.t).getDayOfWeek(args.tz) >= 0)",
	} {
		got, err := evalCond(t, expr, args, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Errorf("%s over %d elements: %v, %v; want the cost limit exceeded", expr, len(xs), got, err)
		}
	}
	for _, expr := range []string{"timestamp(args.t).getHours('America/New_York') == 22", "timestamp(args.t).getHours(args.tz) == 22"} {
		if got, err := evalCond(t, expr, args, nil); err != nil || !got {
			t.Errorf("%s: %v, %v; want true", expr, got, err)
		}
	}
}
