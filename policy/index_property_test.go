package policy

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// naiveMatch is Match's definition: the first grant in file order that
// qualifies. The index must agree with it on every input.
func naiveMatch(p *Policy, has func(string) bool, server, tool, op string) (*Grant, bool) {
	for i := range p.Grants {
		g := &p.Grants[i]
		ok, _ := path.Match(g.Tool, tool)
		if g.Server == server && ok && slices.Contains(g.Operations, op) && has(g.ID) {
			return g, true
		}
	}
	return nil, false
}

func TestIndexedMatchEqualsLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	tools := []string{"read_rows", "read_cols", "write_rows", "rea", "r", "deploy", "deploy_prod", "xzy"}
	pats := []string{"*", "read_*", "read_rows", "re*", "r?ad_rows", "write_*", "deploy", "deploy_*", "[rw]*", "x?y", "*_rows"}
	checked := 0
	for round := 0; round < 200; round++ {
		var sb strings.Builder
		for i, s := range []string{"a", "b"} {
			fmt.Fprintf(&sb, "[[servers]]\nid = %q\ntransport = \"http\"\nurl = \"http://127.0.0.1:%d\"\n", s, i+1)
			for _, tl := range tools {
				fmt.Fprintf(&sb, "[[servers.tools]]\nname = %q\n", tl)
			}
		}
		n := 1 + rng.IntN(30)
		for i := 0; i < n; i++ {
			ops := []string{`"invoke"`, `"invoke", "read"`, `"read"`}[rng.IntN(3)]
			fmt.Fprintf(&sb, "[[grants]]\nid = \"g%d\"\nserver = %q\ntool = %q\noperations = [%s]\n",
				i, []string{"a", "b"}[rng.IntN(2)], pats[rng.IntN(len(pats))], ops)
		}
		p, err := Parse([]byte(sb.String()), "prop.toml")
		if err != nil {
			t.Fatalf("generated policy invalid: %v", err)
		}
		checked++
		held := map[string]bool{}
		for i := 0; i < n; i++ {
			held[fmt.Sprintf("g%d", i)] = rng.IntN(3) > 0
		}
		has := func(id string) bool { return held[id] }
		for _, s := range []string{"a", "b", "c"} {
			for _, tl := range tools {
				for _, op := range []string{"invoke", "read", "write"} {
					g1, ok1 := p.Match(has, s, tl, op)
					g2, ok2 := naiveMatch(p, has, s, tl, op)
					if ok1 != ok2 || ok1 && g1.ID != g2.ID {
						t.Fatalf("round %d %s/%s/%s: index %v %v, scan %v %v", round, s, tl, op, g1, ok1, g2, ok2)
					}
				}
			}
		}
	}
	if checked != 200 {
		t.Fatalf("checked %d rounds", checked)
	}
}
