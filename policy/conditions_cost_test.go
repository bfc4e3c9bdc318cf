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
