// Package schemaref refuses JSON Schemas whose validation would never end,
// or could take time exponential in the depth of the instance (cost.go).
//
// github.com/google/jsonschema-go follows "$ref" without remembering where
// it has been: a schema that reaches itself again without descending into
// the instance, such as {"type":"object","allOf":[{"$ref":"#"}]}, recurses
// until the goroutine's stack overflows — a fatal error that ends the whole
// process, which no recover catches. A schema that descends first
// ({"properties":{"child":{"$ref":"#"}}}) is fine: the instance is finite.
//
// Check finds the first kind before the schema is ever used. It reads
// the schema document itself, so it understands only the "$ref" forms it can
// resolve exactly — JSON Pointers within the document ("#", "#/$defs/a") —
// and refuses the others (anchors, other documents, "$dynamicRef", a nested
// "$id" that would move what "#" means): a schema it cannot judge is not
// used.
package schemaref

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Keywords whose subschemas apply to the same instance as their parent:
// following them does not descend into the instance.
var (
	sameSingle = []string{"not", "if", "then", "else"}
	sameList   = []string{"allOf", "anyOf", "oneOf"}
	// dependencies (draft-07) maps to a schema or to a list of names.
	sameMap = []string{"dependentSchemas", "dependencies"}
)

// Keywords whose subschemas apply to a part of the instance (a member, an
// element, a member name), or that only hold schemas to refer to.
var (
	downSingle = []string{"additionalProperties", "propertyNames", "additionalItems", "contains",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"}
	downList = []string{"prefixItems", "items"} // items: a list in draft-07
	downMap  = []string{"properties", "patternProperties", "$defs", "definitions"}
)

// refused are keywords whose targets Check cannot resolve exactly.
var refused = []string{"$dynamicRef", "$recursiveRef"}

// Check reports an error when validating against the schema (JSON) could
// apply one subschema to the same instance again, without end, or could
// apply a recursive subschema more than once to one part of an instance
// (checkCost), or when it uses a reference it cannot follow exactly.
func Check(schema []byte) error {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return err
	}
	g := &graph{nodes: map[string]any{}, same: map[string][]string{}, down: map[string][]downEdge{}, refs: map[string]string{}}
	if err := g.walk(doc, nil); err != nil {
		return err
	}
	for from, ref := range g.refs {
		to, err := g.target(ref)
		if err != nil {
			return fmt.Errorf("$ref %q at %s: %v", ref, display(split(from)), err)
		}
		g.same[from] = append(g.same[from], to)
	}
	if err := g.findLoop(); err != nil {
		return err
	}
	return g.checkCost()
}

// graph holds every subschema by its path (keys joined with "\x00") and,
// for each, the subschemas that apply to the same instance and those that
// apply to a part of it.
type graph struct {
	nodes map[string]any
	same  map[string][]string
	down  map[string][]downEdge
	refs  map[string]string // path → its "$ref"
}

// downEdge is a subschema applied to the parts of the instance at.
type downEdge struct {
	to string
	at part
}

func key(path []string) string { return strings.Join(path, "\x00") }

func sub(path []string, rest ...string) []string { return append(slices.Clip(path), rest...) }

func (g *graph) walk(v any, path []string) error {
	k := key(path)
	g.nodes[k] = v
	m, ok := v.(map[string]any)
	if !ok {
		return nil // a boolean schema (or a value Resolve has refused)
	}
	// jsonschema-go reads keywords case-insensitively ("AllOf" is allOf,
	// "$REF" is $ref), so every member is matched so too; names are
	// visited in order, so the same schema reports the same problem.
	for _, name := range slices.Sorted(maps.Keys(m)) {
		x := m[name]
		kw, ok := keyword(name)
		if !ok {
			continue
		}
		p := sub(path, name)
		same := slices.Contains(sameSingle, kw) || slices.Contains(sameList, kw) || slices.Contains(sameMap, kw)
		// child walks one subschema; member is its name or index under
		// the keyword ("" for a single subschema).
		child := func(p []string, x any, member string) error {
			if same {
				g.same[k] = append(g.same[k], key(p))
			} else if at, applied := partOf(kw, member, m); applied {
				g.down[k] = append(g.down[k], downEdge{key(p), at})
			}
			return g.walk(x, p)
		}
		switch {
		case slices.Contains(refused, kw):
			return fmt.Errorf("%s at %s is not supported", name, display(path))
		case kw == "$id":
			if len(path) > 0 {
				return fmt.Errorf("$id at %s is not supported: only the root may have one", display(path))
			}
		case kw == "$ref":
			ref, ok := x.(string)
			if !ok {
				return fmt.Errorf("$ref at %s is not a string", display(path))
			}
			if prev, dup := g.refs[k]; dup && prev != ref {
				return fmt.Errorf("two $ref members at %s", display(path))
			}
			g.refs[k] = ref
		case isList(x) && (slices.Contains(sameList, kw) || slices.Contains(downList, kw)):
			for i, e := range x.([]any) {
				if err := child(sub(p, fmt.Sprint(i)), e, fmt.Sprint(i)); err != nil {
					return err
				}
			}
		case slices.Contains(sameMap, kw) || slices.Contains(downMap, kw):
			mm, _ := x.(map[string]any)
			for _, n := range slices.Sorted(maps.Keys(mm)) {
				if isList(mm[n]) {
					continue // dependencies: a list of member names
				}
				if err := child(sub(p, n), mm[n], n); err != nil {
					return err
				}
			}
		case slices.Contains(sameSingle, kw) || slices.Contains(downSingle, kw):
			if err := child(p, x, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyword is the applicator or reference keyword name denotes, matched as
// encoding/json matches member names to fields (strings.EqualFold).
func keyword(name string) (string, bool) {
	for _, list := range [][]string{sameSingle, sameList, sameMap, downSingle, downList, downMap, refused, {"$ref", "$id"}} {
		for _, kw := range list {
			if strings.EqualFold(name, kw) {
				return kw, true
			}
		}
	}
	return "", false
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// target resolves a "$ref" that is a JSON Pointer into this document.
func (g *graph) target(ref string) (string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", fmt.Errorf("only references within the schema (\"#/$defs/name\") are supported")
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return "", err
	}
	if frag == "" {
		return key(nil), nil
	}
	rest, ok := strings.CutPrefix(frag, "/")
	if !ok {
		return "", fmt.Errorf("anchors are not supported: refer by JSON Pointer (\"#/$defs/name\")")
	}
	var path []string
	for _, p := range strings.Split(rest, "/") {
		path = append(path, strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~"))
	}
	if _, ok := g.nodes[key(path)]; !ok {
		return "", fmt.Errorf("it does not point at a subschema")
	}
	return key(path), nil
}

// findLoop reports a cycle among same-instance edges (depth-first search
// with three colours; the graph is finite, bounded by the schema's size).
func (g *graph) findLoop() error {
	const (
		unseen = iota
		open
		done
	)
	colour := map[string]int{}
	var visit func(n string) error
	visit = func(n string) error {
		colour[n] = open
		for _, next := range g.same[n] {
			switch colour[next] {
			case open:
				return fmt.Errorf("%s applies %s to the same value again (through allOf/anyOf/oneOf/not/if/$ref) "+
					"without descending into it: validation would never end", display(split(n)), display(split(next)))
			case unseen:
				if err := visit(next); err != nil {
					return err
				}
			}
		}
		colour[n] = done
		return nil
	}
	starts := make([]string, 0, len(g.nodes))
	for n := range g.nodes {
		starts = append(starts, n)
	}
	slices.Sort(starts) // the same schema reports the same loop
	for _, n := range starts {
		if colour[n] == unseen {
			if err := visit(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func split(k string) []string {
	if k == "" {
		return nil
	}
	return strings.Split(k, "\x00")
}

// display writes a path as a JSON Pointer fragment ("#/$defs/a").
func display(path []string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, p := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
