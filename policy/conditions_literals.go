package policy

import (
	"fmt"
	"path"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/chiokernel/chio/internal/keys"
)

// Comparisons that can never be true. A condition comparing tool, server
// or subject with a name they never hold under its grant (`tool ==
// 'drop_tabel'`, `server == 'database'` on a grant for server db, a
// subject key in upper-case hex) reads as a rule and does nothing, as a
// misspelt action category would: refused at load. Only == and `in` are
// checked: != with such a name is always true, which denies or asks more.

// nameComparison is one `variable == "literal"` (or `variable in [...]`)
// of a condition, variable being tool, server or subject.
type nameComparison struct{ variable, literal string }

// nameComparisons returns the comparisons of tool, server and subject with
// string literals that expr makes with == or `in`.
func nameComparisons(expr celast.Expr) []nameComparison {
	var out []nameComparison
	celast.PostOrderVisit(expr, celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind || len(e.AsCall().Args()) != 2 {
			return
		}
		call := e.AsCall()
		a, b := call.Args()[0], call.Args()[1]
		switch call.FunctionName() {
		case operators.Equals:
			if v := nameVariable(b); v != "" {
				a, b = b, a
			}
			if v := nameVariable(a); v != "" {
				if s, ok := stringLiteral(b); ok {
					out = append(out, nameComparison{v, s})
				}
			}
		case operators.In:
			if v := nameVariable(a); v != "" && b.Kind() == celast.ListKind {
				for _, el := range b.AsList().Elements() {
					if s, ok := stringLiteral(el); ok {
						out = append(out, nameComparison{v, s})
					}
				}
			}
		}
	}))
	return out
}

func nameVariable(e celast.Expr) string {
	if e.Kind() == celast.IdentKind {
		switch n := e.AsIdent(); n {
		case VarTool, VarServer, VarSubject:
			return n
		}
	}
	return ""
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// impossibleName returns why variable can never equal literal in a call
// judged by grant g, or "" when it can (or that cannot be told).
func (v *validator) impossibleName(g *Grant, c nameComparison) string {
	switch c.variable {
	case VarServer:
		if c.literal != g.Server {
			return fmt.Sprintf("grant %q covers server %q only", g.ID, g.Server)
		}
	case VarSubject:
		if k, err := keys.ParsePublicKey(c.literal); err != nil || k.String() != c.literal {
			return "a subject is the calling agent's key, spelled ed25519: and 64 lower-case hex digits"
		}
	case VarTool:
		if !validToolPattern(g.Tool) {
			return "" // grantTarget reports the pattern
		}
		if ok, _ := path.Match(g.Tool, c.literal); !ok {
			return fmt.Sprintf("grant %q covers tool = %q only", g.ID, g.Tool)
		}
		s := v.servers[g.Server]
		if s == nil || s.Transport == TransportMCP || declaredTool(s, c.literal) != nil {
			return ""
		}
		for _, t := range coveredTools(s, g.Tool) {
			if isNearMiss(t.Name, c.literal) {
				return fmt.Sprintf("no tool of server %q is named so: did you mean %q? (tool names match exactly)", s.ID, t.Name)
			}
		}
	}
	return ""
}

// impossibleComparison returns why a comparison of cond can never be true
// under grant g, or "".
func (v *validator) impossibleComparison(g *Grant, cond *Condition) string {
	for _, c := range cond.compares {
		if why := v.impossibleName(g, c); why != "" {
			return fmt.Sprintf("%s is compared with %q, which it never is in a call this grant judges: %s", c.variable, shorten(c.literal, MaxConditionQuote), why)
		}
	}
	return ""
}
