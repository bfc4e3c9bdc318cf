package policy

import (
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The runtime cost of a call on strings. cel charges most calls one unit
// whatever their arguments, though size(), int(), double(), timestamp(), the
// orderings (whose cost cel computes by counting runes) and others walk a
// string argument from end to end: a comprehension that read one long
// argument on each of its elements did thousands of times the work the
// limit allows. Every call is therefore charged one unit plus one per
// stringBytesPerCost bytes of its string arguments, except those cel
// already charges by length (more: a regex or a substring search costs the
// product of both lengths). The limit so bounds an evaluation to about a
// megabyte of string work, and one read of the longest string an argument
// may hold (256 KB) stays well inside it.

// stringBytesPerCost is how many bytes of a string argument cost one unit.
const stringBytesPerCost = 100

// sizedByCEL are the overloads cel charges by the length of their strings.
var sizedByCEL = map[string]bool{
	overloads.Matches: true, overloads.MatchesString: true, overloads.ContainsString: true,
	overloads.StartsWithString: true, overloads.EndsWithString: true,
	overloads.AddString: true, overloads.AddBytes: true,
	overloads.StringToBytes: true, overloads.BytesToString: true,
}

// stringCost is the cel.CostTracking estimator of every condition.
type stringCost struct{}

// The runtime cost of a time zone. A timestamp accessor given a zone
// (`t.getHours('America/New_York')`) loads it from the system's zone files
// on every call (Go caches no zone but UTC and the local one): about 0.25
// ms, some 70 units' worth of ordinary work. Each such call is charged
// zoneCost besides, so an evaluation loads at most about 100 zones.
const zoneCost = 100

// zoneAccessors are the timestamp accessors that take a time zone as their
// second argument (the receiver being the first).
var zoneAccessors = map[string]bool{
	overloads.TimeGetFullYear: true, overloads.TimeGetMonth: true, overloads.TimeGetDayOfYear: true,
	overloads.TimeGetDate: true, overloads.TimeGetDayOfMonth: true, overloads.TimeGetDayOfWeek: true,
	overloads.TimeGetHours: true, overloads.TimeGetMinutes: true, overloads.TimeGetSeconds: true,
	overloads.TimeGetMilliseconds: true,
}

// CallCost returns nil (cel's own cost) for the overloads cel charges by
// length, and otherwise one unit plus the length of the string arguments,
// plus zoneCost for a time zone.
func (stringCost) CallCost(function, overloadID string, args []ref.Val, _ ref.Val) *uint64 {
	if sizedByCEL[overloadID] {
		return nil
	}
	n := uint64(1)
	if zoneAccessors[function] && len(args) == 2 {
		n += zoneCost
	}
	for _, a := range args {
		n += stringBytes(a) / stringBytesPerCost
	}
	return &n
}

// stringBytes is the length of a string or bytes value, 0 for any other.
func stringBytes(v ref.Val) uint64 {
	switch s := v.(type) {
	case types.String:
		return uint64(len(s))
	case types.Bytes:
		return uint64(len(s))
	}
	return 0
}

// The runtime cost of a checked ==, != or `in`. cel charged them by the
// number of elements at the top of their operands, but the strict
// comparison's type check (mismatch, comparisons.go) walks lists of equal
// size and the values under a map's shared keys, and cel's equality after
// it walks no further: two items of a few thousand nested values each
// compared for one unit. They are charged a unit per value that walk
// reaches, and strings by their length as in stringCost.

// compareCost is the cost of comparing a with b: the values mismatch
// reaches, each with its string length.
func compareCost(a, b ref.Val) uint64 {
	n := 1 + min(stringBytes(a), stringBytes(b))/stringBytesPerCost
	switch la := a.(type) {
	case traits.Lister:
		lb, ok := b.(traits.Lister)
		if !ok || la.Size().Equal(lb.Size()) != types.True {
			return n
		}
		size, _ := la.Size().(types.Int)
		for i := types.Int(0); i < size; i++ {
			n += compareCost(la.Get(i), lb.Get(i))
		}
	case traits.Mapper:
		mb, ok := b.(traits.Mapper)
		if !ok {
			return n
		}
		for it := la.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			n++
			if vb, found := mb.Find(k); found {
				n += compareCost(la.Get(k), vb)
			}
		}
	}
	return n
}

// strictEqualCost is the cost tracker of the checked == and !=.
func strictEqualCost(args []ref.Val, _ ref.Val) *uint64 {
	n := compareCost(args[0], args[1])
	return &n
}
