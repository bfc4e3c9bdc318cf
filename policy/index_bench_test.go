package policy

import (
	"fmt"
	"strings"
	"testing"
)

// benchPolicy has n exact grants spread over 10 servers, plus one pattern
// grant per server, as a large deployment might.
func benchPolicy(b *testing.B, n int) *Policy {
	var s strings.Builder
	for srv := range 10 {
		fmt.Fprintf(&s, "[[servers]]\nid = \"srv%d\"\ntransport = \"http\"\nurl = \"http://127.0.0.1:9000\"\n", srv)
		for i := srv; i < n; i += 10 {
			fmt.Fprintf(&s, "[[servers.tools]]\nname = \"tool%d\"\n", i)
		}
	}
	for srv := range 10 {
		fmt.Fprintf(&s, "[[grants]]\nid = \"glob%d\"\nserver = \"srv%d\"\ntool = \"read_*\"\n", srv, srv)
	}
	for i := range n {
		fmt.Fprintf(&s, "[[grants]]\nid = \"g%d\"\nserver = \"srv%d\"\ntool = \"tool%d\"\n", i, i%10, i)
	}
	p, err := Parse([]byte(s.String()), "bench.toml")
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkMatch looks up the last grant in the file, holding every grant
// (a map lookup, like a capability's grant set). Time per op should not
// grow with the number of grants.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			p := benchPolicy(b, n)
			held := map[string]bool{}
			for _, g := range p.Grants {
				held[g.ID] = true
			}
			has := func(id string) bool { return held[id] }
			server, tool := fmt.Sprintf("srv%d", (n-1)%10), fmt.Sprintf("tool%d", n-1)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := p.Match(has, server, tool, "invoke"); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, f := range []string{"testdata/full.toml", "../examples/policies/quickstart.toml"} {
		b.Run(f[strings.LastIndex(f, "/")+1:], func(b *testing.B) {
			p := mustLoad(b, f)
			_ = p
			for b.Loop() {
				if _, err := Load(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
