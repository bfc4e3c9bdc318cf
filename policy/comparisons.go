package policy

import (
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Strict comparisons. CEL's equality is heterogeneous: on dyn values
// `"true" == true`, `1 == true` and `["prod"] in ["prod", "production"]`
// are false, not errors, and `!=` on such pairs is true. In a deny_when that lets a mistyped argument through
// a condition written for the right type (deny_when = "args.force == true"
// allows {"force": "true"}, which a tool reading values loosely treats as
// true). Conditions therefore compare strictly: ==, != and `in` whose
// operands are of different types are an evaluation error, which the kernel
// turns into a deny whatever the condition's kind. Two exceptions keep
// ordinary conditions working:
//
//   - numbers of any kind (int, uint, double) compare with each other as in
//     CEL (JSON has one number type: 450 and 450.0 are equal);
//   - anything compares with null (`intent == null`, `args.x != null`).
//
// Lists and maps compared with == or != are checked element by element
// (values under the same key, for maps). `x in list` checks x against every
// element and `x in map` against every key, whether or not x is found, so
// the answer does not depend on the order of the list.

// strictInOverload names every checked `in` call. It must not be
// overloads.InList: cel's OptOptimize rewrites in_list calls over a constant
// list into a set lookup after our decorator ran, which would drop the
// check. strictInCost charges it what the check walks (cel charged in_list
// the size of the list, and in_map 1: a map lookup).
const strictInOverload = "chio_in_strict"

// strictComparisons is the planner decorator (cel.CustomDecoratorV2) that
// replaces every ==, != and `in` call of a program with a checked one. The
// replacement is an ordinary call node over the same argument nodes, so
// arguments are evaluated once, errors in them propagate as before, and the
// cost tracker still charges the call.
func strictComparisons(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || len(call.Args()) != 2 {
		return i, nil
	}
	overload := call.OverloadID()
	var impl func(lhs, rhs ref.Val) ref.Val
	switch call.Function() {
	case operators.Equals:
		impl = strictEqual
	case operators.NotEquals:
		impl = strictNotEqual
	case operators.In:
		impl, overload = strictIn, strictInOverload
	default:
		return i, nil
	}
	op := func(args ...ref.Val) ref.Val { return impl(args[0], args[1]) }
	return interpreter.NewCall(call.ID(), call.Function(), overload, call.Args(), op), nil
}

// strictInCost is the runtime cost of a checked `in`: the size of the list
// or map on its right, at least 1, times the length of a string on its left
// (as stringCost charges strings, conditions_cost.go); but a list or map on
// the left, which the check compares with each element of a list, costs
// what each comparison walks (compareCost).
func strictInCost(args []ref.Val, _ ref.Val) *uint64 {
	_, walks := args[0].(traits.Lister)
	if _, ok := args[0].(traits.Mapper); ok {
		walks = true
	}
	if l, ok := args[1].(traits.Lister); ok && walks {
		var n uint64 = 1
		for it := l.Iterator(); it.HasNext() == types.True; {
			n += compareCost(args[0], it.Next())
		}
		return &n
	}
	var n uint64 = 1
	if l, ok := args[1].(traits.Sizer); ok {
		if s, ok := l.Size().(types.Int); ok && s > 0 {
			n = uint64(s)
		}
	}
	n *= 1 + stringBytes(args[0])/stringBytesPerCost
	return &n
}

func strictEqual(lhs, rhs ref.Val) ref.Val {
	if err := mismatch("==", lhs, rhs); err != nil {
		return err
	}
	return types.Equal(lhs, rhs)
}

func strictNotEqual(lhs, rhs ref.Val) ref.Val {
	if err := mismatch("!=", lhs, rhs); err != nil {
		return err
	}
	return types.Bool(types.Equal(lhs, rhs) != types.True)
}

// strictIn is cel's `in` after checking the left operand against every
// element of a list or every key of a map.
func strictIn(lhs, rhs ref.Val) ref.Val {
	if l, ok := rhs.(traits.Lister); ok {
		for it := l.Iterator(); it.HasNext() == types.True; {
			if err := mismatch("in", lhs, it.Next()); err != nil {
				return err
			}
		}
	} else if m, ok := rhs.(traits.Mapper); ok {
		for it := m.Iterator(); it.HasNext() == types.True; {
			if err := mismatch("in", lhs, it.Next()); err != nil {
				return err
			}
		}
	}
	if c, ok := rhs.(traits.Container); ok {
		return c.Contains(lhs)
	}
	return types.ValOrErr(rhs, "no such overload: `in` needs a list or a map, not %s", rhs.Type().TypeName())
}

// mismatch returns an error value naming the two types when a and b may
// not be compared, or nil when they may. Lists (of equal size) and maps are
// checked pairwise; the recursion is bounded by the depth of the arguments.
func mismatch(op string, a, b ref.Val) ref.Val {
	if a.Type() == types.NullType || b.Type() == types.NullType || isNumber(a) && isNumber(b) {
		return nil
	}
	ta, tb := a.Type().TypeName(), b.Type().TypeName()
	if ta != tb {
		if op == "in" {
			return types.NewErr("type mismatch: `in` compares %s with %s", ta, tb)
		}
		return types.NewErr("type mismatch: %s compares %s with %s", op, ta, tb)
	}
	switch la := a.(type) {
	case traits.Lister:
		lb, ok := b.(traits.Lister)
		if !ok || la.Size().Equal(lb.Size()) != types.True {
			return nil // unequal sizes: the lists are simply not equal
		}
		n, _ := la.Size().(types.Int)
		for i := types.Int(0); i < n; i++ {
			if err := mismatch(op, la.Get(i), lb.Get(i)); err != nil {
				return err
			}
		}
	case traits.Mapper:
		mb, ok := b.(traits.Mapper)
		if !ok {
			return nil
		}
		for it := la.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			if vb, found := mb.Find(k); found {
				if err := mismatch(op, la.Get(k), vb); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isNumber(v ref.Val) bool {
	switch v.(type) {
	case types.Int, types.Uint, types.Double:
		return true
	}
	return false
}
