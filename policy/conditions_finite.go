package policy

import (
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Doubles that are not numbers. CEL's double arithmetic is IEEE 754:
// 0.0/0.0 is NaN, 1.0/0.0 and 1e308*10.0 are infinite, and double("NaN")
// or double("-inf") convert without complaint. NaN compares false with
// everything (and != true), so `double(args.amount) / double(args.qty) >
// 100.0` let {"amount":0,"qty":0} through an approval threshold. So every
// call of a condition whose result is a double NaN or ±Inf returns an
// error instead, which the kernel turns into a deny. The arguments cannot
// hold such a value (canon refuses numbers outside the finite doubles), nor
// can a literal (cel refuses 1e999), so every double a condition compares
// is finite. A term that does not decide the result keeps CEL's meaning:
// in `a || b` and `a && b` an error on one side gives way to a true `||`
// or a false `&&` on the other, as a type mismatch does.

// finiteCall is a call whose double result is checked.
type finiteCall struct {
	interpreter.InterpretableCall
}

// finiteDoubles is the planner decorator (cel.CustomDecoratorV2) that
// checks the result of every call. It must come after the decorators that
// replace calls, so that it wraps the replacement. A call cel evaluates
// when the program is planned (a conversion of a constant, such as
// double('NaN')) fails there, and the policy does not load.
func finiteDoubles(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	if call, ok := i.(interpreter.InterpretableCall); ok {
		return finiteCall{call}, nil
	}
	return i, nil
}

func (c finiteCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return finite(c.InterpretableCall.Exec(frame))
}

func (c finiteCall) Eval(vars interpreter.Activation) ref.Val {
	return finite(c.InterpretableCall.Eval(vars))
}

// finite returns v, or an error when v is a double NaN or infinity.
func finite(v ref.Val) ref.Val {
	if d, ok := v.(types.Double); ok {
		switch f := float64(d); {
		case math.IsNaN(f):
			return types.NewErr("a double is NaN, not a number (0.0/0.0, or double() of \"NaN\"): it cannot be compared")
		case math.IsInf(f, 0):
			return types.NewErr("a double is %v, beyond the finite doubles (a division by zero or an overflow): it cannot be compared", f)
		}
	}
	return v
}
