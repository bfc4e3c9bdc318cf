package policy

import celast "github.com/google/cel-go/common/ast"

// A condition that reads `subject` decides by who calls: `chio policy
// explain` and `chio policy test` cannot answer such a grant's calls for
// "any agent" (they would evaluate it with an empty key), so they ask for
// the agent's key instead.

// readsSubject reports whether a compiled expression names the variable
// subject (a macro variable spelled so counts too: asking for a key it did
// not need is the safe mistake).
func readsSubject(expr celast.Expr) bool {
	found := false
	celast.PostOrderVisit(expr, celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind && e.AsIdent() == VarSubject {
			found = true
		}
	}))
	return found
}

// ReadsSubject reports whether any of the grant's conditions reads the
// calling agent's key (false for nil: a grant without conditions).
func (g *GrantConditions) ReadsSubject() bool {
	if g == nil {
		return false
	}
	for _, list := range [][]*Condition{g.DenyWhen, g.RequireApprovalWhen} {
		for _, c := range list {
			if c.subject {
				return true
			}
		}
	}
	return false
}
