package policy

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// The cost of matches(). cel charged it after the regex had run, by the
// length of the pattern's text. Go's regexp runs in time proportional to
// the string times the size of the compiled program, which counted repeats
// make far larger than the text (`[a-z]{1,1000}x` is 14 characters and
// about 2,000 instructions): one call over a 250 KB argument could run for
// seconds, or, with a pattern the arguments supply, for hours, before the
// limit was found exceeded. So every matches() call is replaced by a checked
// one, charged as cel charges it but by the larger of the pattern's length
// and its program's size, and refused before it runs when that charge
// alone exceeds the limit (the evaluation is cancelled as the limit would
// cancel it, saying why).

// checkedMatches names the checked call, as function and overload: cel's
// OptOptimize replaces a matches() call on a constant pattern (found by
// either name) with its own after our decorator ran, which would drop the
// check.
const checkedMatches = "chio_matches_checked"

// regexSizes holds the program sizes of one condition's constant patterns.
// The decorator fills it while the program is planned; evaluations only
// read it.
type regexSizes map[string]uint64

// decorate is the planner decorator (cel.CustomDecoratorV2) that replaces
// every matches() call with a checked one. A constant pattern is compiled
// once, here: one that does not compile is an error in the file.
func (s regexSizes) decorate(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.Function() != overloads.Matches || len(call.Args()) != 2 {
		return i, nil
	}
	var constant *regexp.Regexp
	if c, ok := call.Args()[1].(interpreter.InterpretableConst); ok {
		if p, ok := c.Value().(types.String); ok {
			re, err := regexp.Compile(string(p))
			if err != nil {
				return nil, err
			}
			constant, s[string(p)] = re, regexSize(string(p))
		}
	}
	op := func(args ...ref.Val) ref.Val {
		in, ok := args[0].(types.String)
		pattern, ok2 := args[1].(types.String)
		if !ok || !ok2 {
			return types.NoSuchOverloadErr()
		}
		if cost := s.cost(in, pattern); cost > MaxConditionCost {
			panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: fmt.Sprintf(
				"operation cancelled: actual cost limit exceeded: matches() over a %d-byte string costs %d, over the limit of %d; it was refused before it ran",
				len(in), cost, MaxConditionCost)})
		}
		re := constant
		if re == nil {
			var err error
			if re, err = regexp.Compile(string(pattern)); err != nil {
				return types.WrapErr(err)
			}
		}
		return types.Bool(re.MatchString(string(in)))
	}
	return interpreter.NewCall(call.ID(), checkedMatches, checkedMatches, call.Args(), op), nil
}

// cost is cel's charge for matches() — a unit per 10 bytes of the string
// (plus one) times a unit per 4 of the pattern — with the pattern counted
// by the larger of its length and its program's size.
func (s regexSizes) cost(in, pattern types.String) uint64 {
	str := (uint64(len(in)) + 1 + 9) / 10
	size := uint64(len(pattern))
	if str*((size+3)/4) <= MaxConditionCost { // else over the limit without compiling
		if n, ok := s[string(pattern)]; ok {
			size = n
		} else {
			size = regexSize(string(pattern))
		}
	}
	return str * max((size+3)/4, 1)
}

// costOf is the cost tracker of the checked call.
func (s regexSizes) costOf(args []ref.Val, _ ref.Val) *uint64 {
	n := uint64(1)
	in, ok := args[0].(types.String)
	pattern, ok2 := args[1].(types.String)
	if ok && ok2 {
		n = s.cost(in, pattern)
	}
	return &n
}

// regexSize is the larger of a pattern's length and the number of
// instructions of its compiled program (its length when it does not
// compile: the call then fails).
func regexSize(pattern string) uint64 {
	n := uint64(len(pattern))
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return n
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return n
	}
	return max(n, uint64(len(prog.Inst)))
}
