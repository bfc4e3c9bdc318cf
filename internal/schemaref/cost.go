package schemaref

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The cost of validation.
//
// jsonschema-go applies every applicable subschema: every allOf, anyOf and
// oneOf branch, and every one of properties, patternProperties and
// additionalProperties that matches a member. When two of those lead to
// one recursive subschema, each level of the instance doubles the work:
// {"properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}} validates
// {"a":{"a":…}} nested n deep in 2^n steps, and arguments may nest 64
// deep. The validator has no budget, and nothing interrupts it.
//
// checkCost refuses such a schema: one where a recursive subschema (one
// that reaches itself again by descending into the instance) can be
// applied more than once to one part of an instance. It follows two
// routes through the schema side by side, step by step into the instance
// (two routes may take the same step only when their steps can apply to
// one part: the same member name, overlapping indexes, …), and refuses
// when they have split and then apply one recursive subschema. A schema
// that passes applies each recursive subschema at most once per part of
// the instance, so its cost grows with the instance's size, not
// exponentially with its depth.
//
// The rule errs toward refusing: a recursive subschema applied twice is
// refused even when the repetition would not compound (two routes that
// rejoin), parts are told apart only when that is certain (a pattern and
// a different pattern are assumed to match a common name), and a schema
// too large to judge within the bounds below is refused.

const (
	// maxClosure bounds the same-instance applications recorded in all.
	maxClosure = 1 << 18
	// maxWork bounds the applications the side-by-side walk looks at and
	// the pairs of steps it tries (about a second of work, at worst).
	maxWork = 1 << 20
)

var errTooComplex = errors.New("the schema has too many subschemas that apply to one value to judge " +
	"how often validation would apply each: it is refused rather than risk validation that never ends")

// routes is where two routes through the schema have reached, at one part
// of the instance: a and b, the subschemas last entered by descending
// (or the root), and whether the routes have split.
type routes struct {
	a, b  string
	split bool
}

// step is one descent from a same-instance application of a subschema.
type step struct {
	to    string
	at    part
	paths int // how many same-instance routes reach the descent (at most 2)
}

func (g *graph) checkCost() error {
	comps := g.components()
	if err := g.checkRoutes(comps); err != nil {
		return err
	}
	recursive := map[string]bool{}
	for _, c := range comps {
		if c.recursive {
			for _, n := range c.nodes {
				recursive[n] = true
			}
		}
	}
	if len(recursive) == 0 {
		return nil // nothing is applied again deeper down
	}
	c := &closures{g: g, memo: map[string]map[string]int{}}
	work := 0
	seen := map[string]bool{}
	var queue []routes
	// visit checks what routes r apply and queues r to go on, unless
	// routes that descend alike (the same subschemas with descents, the
	// same number of times) have gone on already.
	visit := func(r routes) error {
		ea, err := c.of(r.a)
		if err != nil {
			return err
		}
		eb, err := c.of(r.b)
		if err != nil {
			return err
		}
		if work += len(ea) + len(eb); work > maxWork {
			return errTooComplex
		}
		// The first recursive subschema (by path) applied twice, if any
		// (the root's path is "").
		twice, found := "", false
		for q, k := range ea {
			if recursive[q] && (!r.split && k >= 2 || r.split && eb[q] > 0) && (!found || q < twice) {
				twice, found = q, true
			}
		}
		if found {
			return fmt.Errorf("%s can be applied to one value more than once (through two of allOf/anyOf/oneOf/$ref, "+
				"or two of properties/patternProperties/additionalProperties/items matching one member or element), "+
				"and it applies itself again deeper in the value: the cost of validation could double with each level "+
				"of nesting, so the schema is refused (apply a recursive subschema through one route per level)",
				display(split(twice)))
		}
		k := fmt.Sprintf("%t\x01%s\x01%s", r.split, g.descending(ea), g.descending(eb))
		if !seen[k] {
			seen[k] = true
			queue = append(queue, r)
		}
		return nil
	}
	if err := visit(routes{key(nil), key(nil), false}); err != nil {
		return err
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		ea, _ := c.of(r.a) // computed by visit
		eb, _ := c.of(r.b)
		sa, sb := g.steps(ea), g.steps(eb)
		named, unnamed := byName(sb)
		for i, x := range sa {
			candidates := unnamed
			if x.at.exact {
				candidates = append(slices.Clip(named[x.at.name]), unnamed...)
			} else if len(named) > 0 {
				candidates = allSteps(len(sb))
			}
			for _, j := range candidates {
				y := sb[j]
				if work++; work > maxWork {
					return errTooComplex
				}
				if !overlap(x.at, y.at) {
					continue
				}
				var next []routes
				if !r.split && i == j { // one step, taken by both routes
					next = append(next, routes{x.to, x.to, false})
					if x.paths >= 2 { // …along two routes to it
						next = append(next, routes{x.to, x.to, true})
					}
				} else {
					next = append(next, routes{min(x.to, y.to), max(x.to, y.to), true})
				}
				for _, n := range next {
					if err := visit(n); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// descending writes the applications that descend further, with their
// counts: all that the routes from here depend on.
func (g *graph) descending(applied map[string]int) string {
	var b strings.Builder
	for _, q := range slices.Sorted(maps.Keys(applied)) {
		if len(g.down[q]) > 0 {
			fmt.Fprintf(&b, "%s\x02%d\x02", q, applied[q])
		}
	}
	return b.String()
}

// byName indexes steps by the member name they apply to (named) and lists
// the others (unnamed): a step to one exact name can only overlap a step
// to the same name or an unnamed one, so most pairs need no look.
func byName(steps []step) (named map[string][]int, unnamed []int) {
	named = map[string][]int{}
	for j, s := range steps {
		if s.at.exact {
			named[s.at.name] = append(named[s.at.name], j)
		} else {
			unnamed = append(unnamed, j)
		}
	}
	return named, unnamed
}

func allSteps(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// steps lists the descents from the subschemas applied to one value.
func (g *graph) steps(applied map[string]int) []step {
	var out []step
	for _, m := range slices.Sorted(maps.Keys(applied)) {
		for _, e := range g.down[m] {
			out = append(out, step{e.to, e.at, applied[m]})
		}
	}
	return out
}

// closures computes, for a subschema, every subschema applied to the same
// value when it is (itself included), with how many routes apply it,
// counted up to 2. The same-instance graph has no cycle (findLoop).
type closures struct {
	g     *graph
	memo  map[string]map[string]int
	total int
}

func (c *closures) of(n string) (map[string]int, error) {
	if m, ok := c.memo[n]; ok {
		return m, nil
	}
	m := map[string]int{n: 1}
	for _, next := range c.g.same[n] {
		sub, err := c.of(next)
		if err != nil {
			return nil, err
		}
		for q, k := range sub {
			m[q] = min(2, m[q]+k)
		}
	}
	if c.total += len(m); c.total > maxClosure {
		return nil, errTooComplex
	}
	c.memo[n] = m
	return m, nil
}

// maxRoutes bounds the routes through the schema, counted below.
const maxRoutes = 1 << 16

// checkRoutes bounds what non-recursive repetition costs. Routes from the
// root to a subschema, counted with each group of mutually recursive
// subschemas as one step (a recursive subschema is applied at most once
// per value, as checkCost makes sure), bound how often one value can be
// validated against it: {"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}
// applies a twice, and a chain of 40 such definitions would apply the last
// one 2^40 times to every value, recursion or not. Routes to different
// members are counted alike, so the bound errs toward refusing.
func (g *graph) checkRoutes(comps []component) error {
	of := map[string]int{} // subschema → its component
	for i, c := range comps {
		for _, n := range c.nodes {
			of[n] = i
		}
	}
	routes := make([]int, len(comps))
	routes[of[key(nil)]] = 1
	total := 0
	// components lists each component after every one it reaches: walk it
	// backwards, from the root towards what the root reaches.
	for i := len(comps) - 1; i >= 0; i-- {
		if routes[i] == 0 {
			continue // not reached from the root ($defs nothing refers to)
		}
		if total += routes[i]; total > maxRoutes {
			return fmt.Errorf("the schema applies its subschemas along more than %d routes (a definition reached "+
				"through several allOf/anyOf/oneOf branches or $refs, each of which is reached through several more, "+
				"multiplies): validation could be applied to one value that many times, so the schema is refused", maxRoutes)
		}
		for _, n := range comps[i].nodes {
			for _, m := range g.next(n) {
				if j := of[m]; j != i {
					routes[j] = min(maxRoutes+1, routes[j]+routes[i])
				}
			}
		}
	}
	return nil
}

// next lists the subschemas n applies, to the same value or to its parts.
func (g *graph) next(n string) []string {
	out := slices.Clone(g.same[n])
	for _, e := range g.down[n] {
		out = append(out, e.to)
	}
	return out
}

// component is a strongly connected component of the whole graph (same
// instance and descending edges); recursive when it has a cycle: its
// subschemas validation can reach again, deeper in the instance.
type component struct {
	nodes     []string
	recursive bool
}

// components lists the graph's components, each after every component it
// reaches (Tarjan's algorithm).
func (g *graph) components() []component {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out []component
	var visit func(n string)
	visit = func(n string) {
		index[n], low[n] = len(index), len(index)
		stack = append(stack, n)
		onStack[n] = true
		for _, m := range g.next(n) {
			if _, ok := index[m]; !ok {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] != index[n] {
			return
		}
		var c component
		for {
			m := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[m] = false
			c.nodes = append(c.nodes, m)
			if m == n {
				break
			}
		}
		c.recursive = len(c.nodes) > 1 || slices.Contains(g.next(n), n)
		out = append(out, c)
	}
	for _, n := range slices.Sorted(maps.Keys(g.nodes)) {
		if _, ok := index[n]; !ok {
			visit(n)
		}
	}
	return out
}
