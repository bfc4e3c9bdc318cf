package policy

import (
	"fmt"
	"slices"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/chiokernel/chio/internal/canon"
)

// Argument names in another letter case. A condition reads member names
// exactly, as CEL maps do: `has(args.note)` is false for {"Note": …}. Many
// tools do not: Go's encoding/json, and other frameworks, fill a field
// named note from "Note" or "NOTE". Such a call would pass
// `has(args.note) && args.note.contains('DROP TABLE')` by the note's
// absence while the tool read it. (canon already refuses one object
// holding both spellings.) So a condition that reads a name (a field
// selected or tested with has(), a constant key in args["…"] or `'…' in
// args`; not a field of the intent, which no tool receives) cannot be decided when the arguments hold, at any depth, a member
// name equal to it under case folding but spelled otherwise (and not read
// by the condition itself): Eval returns an error, which denies.
//
// A condition may also find a name without selecting it: by iterating over
// a map's names (`args.exists(k, k == 'force')`, all, exists_one, filter,
// map), by testing names it holds in a list (`['force'].exists(k, k in
// args)`), or by comparing with a map literal (`args.opts == {'force':
// true}`). So the keys of a map literal, and every string literal of a
// condition holding a comprehension (every macro but has()), are literals
// it may compare with a name: an argument named like one of them in
// another letter case cannot be decided either. Such a literal may be a
// value (a tag 'Note'), so it excuses its own spelling only when the
// condition reads no name of that folded form otherwise: beside
// `has(args.note)`, an argument "Note" is refused whatever the literals.

// readNames returns the member names a compiled expression reads, and the
// string literals it may compare with names, each sorted and without
// repeats.
func readNames(expr celast.Expr) (names, literals []string) {
	var strs []string
	iterates := false
	celast.PostOrderVisit(expr, celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.ComprehensionKind:
			iterates = true
		case celast.LiteralKind:
			strs = appendConstString(strs, e)
		case celast.MapKind:
			for _, entry := range e.AsMap().Entries() {
				literals = appendConstString(literals, entry.AsMapEntry().Key())
			}
		case celast.SelectKind:
			if !underIntent(e) {
				names = append(names, e.AsSelect().FieldName())
			}
		case celast.CallKind:
			call := e.AsCall()
			args := call.Args()
			switch {
			case call.FunctionName() == operators.Index && len(args) == 2:
				names = appendConstString(names, args[1])
			case call.FunctionName() == operators.In && len(args) == 2:
				names = appendConstString(names, args[0])
			}
		}
	}))
	if iterates {
		literals = append(literals, strs...)
	}
	slices.Sort(names)
	slices.Sort(literals)
	return slices.Compact(names), slices.Compact(literals)
}

// underIntent reports a selection from the intent (intent.purpose,
// intent.max_amount.units): the kernel decodes the intent by exact names,
// and no tool receives it.
func underIntent(e celast.Expr) bool {
	for e.Kind() == celast.SelectKind {
		e = e.AsSelect().Operand()
	}
	return e.Kind() == celast.IdentKind && e.AsIdent() == VarIntent
}

func appendConstString(names []string, e celast.Expr) []string {
	if e.Kind() == celast.LiteralKind {
		if s, ok := e.AsLiteral().(types.String); ok {
			names = append(names, string(s))
		}
	}
	return names
}

// argNames returns the member names of the arguments, at every depth, by
// their case-folded form (canon.FoldKey), built once per input.
func (in *ConditionInput) argNames() map[string][]string {
	if in.folded == nil {
		in.folded = map[string][]string{}
		collectNames(in.Args, in.folded)
	}
	return in.folded
}

func collectNames(v any, out map[string][]string) {
	switch t := v.(type) {
	case map[string]any:
		for name, e := range t {
			if k := canon.FoldKey(name); !slices.Contains(out[k], name) {
				out[k] = append(out[k], name)
			}
			collectNames(e, out)
		}
	case []any:
		for _, e := range t {
			collectNames(e, out)
		}
	}
}

// otherCase returns an error naming an argument whose name is one c reads
// in another letter case, or nil when there is none.
func (c *Condition) otherCase(in *ConditionInput) error {
	if len(c.names)+len(c.literals) == 0 || len(in.Args) == 0 {
		return nil
	}
	sent := in.argNames()
	for _, list := range [2][]string{c.names, c.literals} { // not a joined copy: this runs on every call
		for _, name := range list {
			for _, s := range sent[canon.FoldKey(name)] {
				if !c.reads(s) {
					return fmt.Errorf("the arguments name %q, which differs only in letter case from %q that the condition reads: "+
						"a tool may read one as the other", shorten(s, MaxConditionQuote), shorten(name, MaxConditionQuote))
				}
			}
		}
	}
	return nil
}

// reads reports whether c reads the name s in this very spelling: a name
// it reads, or one of its literals when it reads no name equal to s under
// case folding.
func (c *Condition) reads(s string) bool {
	if slices.Contains(c.names, s) {
		return true
	}
	if !slices.Contains(c.literals, s) {
		return false
	}
	k := canon.FoldKey(s)
	return !slices.ContainsFunc(c.names, func(n string) bool { return canon.FoldKey(n) == k })
}
