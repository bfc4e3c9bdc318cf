package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// Argument conditions: a grant's deny_when and require_approval_when are CEL
// expressions over the call. They are compiled and type-checked once, when
// the policy is validated, and kept in the Policy; the kernel evaluates them
// with a cost limit, and treats any evaluation error as a deny.

// Condition kinds, as written in the file; the kernel's guards carry the
// same names.
const (
	KindDenyWhen            = "deny_when"
	KindRequireApprovalWhen = "require_approval_when"
)

// The variables a condition may use.
const (
	VarArgs    = "args"    // the arguments object
	VarIntent  = "intent"  // the governed intent object, or null
	VarTool    = "tool"    // the tool name
	VarServer  = "server"  // the server id
	VarSubject = "subject" // the calling agent's key, "ed25519:…"
)

// Condition is one compiled expression of a grant.
type Condition struct {
	Kind  string // KindDenyWhen or KindRequireApprovalWhen
	Index int    // position in the grant's list
	Expr  string // the source text
	prg   cel.Program
	// names are the member names the expression reads, literals the
	// strings it may compare with names (conditions_names.go).
	names, literals []string
	// compares are its comparisons of tool, server and subject with
	// literals (conditions_literals.go).
	compares []nameComparison
	// subject: it reads the calling agent's key (conditions_subject.go).
	subject bool
}

// GrantConditions are a grant's compiled conditions, in file order.
type GrantConditions struct {
	DenyWhen            []*Condition
	RequireApprovalWhen []*Condition
}

// ConditionInput is what a condition sees. Args and Intent hold decoded
// JSON: map[string]any, []any, string, bool, nil, and numbers as int64
// (integral values) or float64.
type ConditionInput struct {
	Args    map[string]any
	Intent  any // nil when the call carries no governed intent
	Tool    string
	Server  string
	Subject string

	// folded indexes the names in Args by case-folded form, built on first
	// use (conditions_names.go); an input is used by one goroutine at a time.
	folded map[string][]string
}

// ErrConditionNotBoolean is returned when an expression yields something
// other than true or false at run time (it was type-checked as bool, so
// this means a dynamic value surprised the checker).
var ErrConditionNotBoolean = errors.New("condition did not evaluate to true or false")

// Conditions returns the compiled conditions of the grant with this id, or
// nil when it has none (or the Policy was not built by Parse).
func (p *Policy) Conditions(grantID string) *GrantConditions {
	return p.conditions[grantID]
}

// Eval runs the condition. Any error — a missing key, a type mismatch (also
// in ==, != and `in`: see comparisons.go), an argument named as one the
// condition reads but in another letter case (conditions_names.go), the
// cost limit — is returned, and callers must treat it as a deny.
func (c *Condition) Eval(in *ConditionInput) (bool, error) {
	if c.prg == nil {
		return false, fmt.Errorf("condition %s was not compiled", c)
	}
	if err := c.otherCase(in); err != nil {
		return false, err
	}
	args := in.Args
	if args == nil {
		args = map[string]any{}
	}
	out, _, err := c.prg.Eval(map[string]any{
		VarArgs: args, VarIntent: in.Intent, VarTool: in.Tool, VarServer: in.Server, VarSubject: in.Subject,
	})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, ErrConditionNotBoolean
	}
	return bool(b), nil
}

// String names the condition for receipts and messages:
// deny_when[1] `args.amount > 1000`, with long expressions shortened.
func (c *Condition) String() string {
	return fmt.Sprintf("%s[%d] `%s`", c.Kind, c.Index, shorten(c.Expr, MaxConditionQuote))
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// conditionEnv is the one CEL environment every condition compiles in. It
// is immutable once built and safe for concurrent use. Only CEL's standard
// library is offered: its functions all carry runtime cost, so the cost
// limit bounds every evaluation.
var conditionEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(VarArgs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(VarIntent, cel.DynType),
		cel.Variable(VarTool, cel.StringType),
		cel.Variable(VarServer, cel.StringType),
		cel.Variable(VarSubject, cel.StringType),
		// JSON has one number type; args.amount > 100 must work whether
		// the agent wrote 450 or 450.0.
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxConditionLen),
		// Not cel.RegexProgramSizeLimit: its validator panics on patterns
		// with counted repeats (v0.31.0). Go's regexp bounds patterns
		// itself (repeat counts, program size) and runs in linear time.
	)
})

// compileCondition compiles and type-checks one expression. A panic in
// the compiler is an error in the file, never a crash of chiod.
func compileCondition(kind string, index int, expr string) (cond *Condition, err error) {
	defer func() {
		if r := recover(); r != nil {
			cond, err = nil, fmt.Errorf("the expression could not be compiled: %v", r)
		}
	}()
	env, err := conditionEnv()
	if err != nil {
		return nil, fmt.Errorf("the condition environment failed to build: %v", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && len(iss.Errors()) > 0 {
		var msgs []string
		for _, e := range iss.Errors() {
			m := e.Message
			if l := e.Location; l != nil && l.Line() > 0 {
				m = fmt.Sprintf("%s (line %d, column %d of the expression)", m, l.Line(), l.Column()+1)
			}
			msgs = append(msgs, m)
			if len(msgs) == 3 {
				break
			}
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, fmt.Errorf("must be true or false, but it is of type %s (compare it: `… == true`, `… > 0`)", t)
	}
	regexes := regexSizes{}
	prg, err := env.Program(ast, cel.CostLimit(MaxConditionCost), cel.EvalOptions(cel.OptOptimize),
		// ==, != and `in` on mismatched types are errors, not false
		// (comparisons.go), and they cost what they walk
		// (conditions_cost.go).
		cel.CustomDecoratorV2(strictComparisons),
		cel.CostTrackerOptions(interpreter.OverloadCostTracker(strictInOverload, strictInCost),
			interpreter.OverloadCostTracker(overloads.Equals, strictEqualCost),
			interpreter.OverloadCostTracker(overloads.NotEquals, strictEqualCost),
			interpreter.OverloadCostTracker(checkedMatches, regexes.costOf)),
		// matches() is charged by its program and checked before it runs
		// (conditions_regex.go).
		cel.CustomDecoratorV2(regexes.decorate),
		// Calls that walk a string are charged its length (conditions_cost.go).
		cel.CostTracking(stringCost{}),
		// A double result that is NaN or infinite is an error
		// (conditions_finite.go); last, so that it checks the calls the
		// decorators above put in.
		cel.CustomDecoratorV2(finiteDoubles))
	if err != nil {
		return nil, err
	}
	names, literals := readNames(ast.NativeRep().Expr())
	return &Condition{Kind: kind, Index: index, Expr: expr, prg: prg, names: names, literals: literals,
		compares: nameComparisons(ast.NativeRep().Expr()), subject: readsSubject(ast.NativeRep().Expr())}, nil
}

// conditions validates and compiles a grant's expressions, keeping the
// programs in the Policy under the grant's id.
func (v *validator) conditions(base []string, g *Grant) {
	c := &g.Constraints
	gc := &GrantConditions{}
	ok := true
	for _, list := range []struct {
		kind  string
		exprs Expressions
		out   *[]*Condition
	}{
		{KindDenyWhen, c.DenyWhen, &gc.DenyWhen},
		{KindRequireApprovalWhen, c.RequireApprovalWhen, &gc.RequireApprovalWhen},
	} {
		if n := len(list.exprs); n > MaxConditionsPerGrant {
			v.at(base, k(list.kind), "%d %s expressions; the limit is %d", n, list.kind, MaxConditionsPerGrant)
			ok = false
			continue
		}
		for j, expr := range list.exprs {
			at := k(list.kind, idx(j))
			switch {
			case strings.TrimSpace(expr) == "":
				v.at(base, at, "%s[%d] is empty: write a CEL expression such as `args.amount > 1000`", list.kind, j)
			case len(expr) > MaxConditionLen:
				v.at(base, at, "%s[%d] is %d bytes; the limit is %d", list.kind, j, len(expr), MaxConditionLen)
			case !utf8.ValidString(expr):
				v.at(base, at, "%s[%d] is not valid UTF-8", list.kind, j)
			default:
				cond, err := compileCondition(list.kind, j, expr)
				if err != nil {
					v.at(base, at, "%s[%d] `%s`: %v", list.kind, j, shorten(expr, MaxConditionQuote), err)
					break
				}
				if why := v.impossibleComparison(g, cond); why != "" {
					v.at(base, at, "%s[%d] `%s`: %s", list.kind, j, shorten(expr, MaxConditionQuote), why)
					break
				}
				*list.out = append(*list.out, cond)
				continue
			}
			ok = false
		}
	}
	if !ok || len(gc.DenyWhen)+len(gc.RequireApprovalWhen) == 0 || g.ID == "" {
		return
	}
	if v.p.conditions == nil {
		v.p.conditions = map[string]*GrantConditions{}
	}
	v.p.conditions[g.ID] = gc
}
