package policy

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

const matchPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[servers]]
id = "db"
transport = "http"
url = "http://127.0.0.1:9003"
tools = [{ name = "read_rows" }, { name = "write_rows", category = "data_mutation" }, { name = "admin/drop" }]

[[grants]]
id = "db-read"
server = "db"
tool = "read_*"

[[grants]]
id = "db-write-exact"
server = "db"
tool = "write_rows"

[[grants]]
id = "db-any"
server = "db"
tool = "*"
operations = ["invoke", "describe"]

[[grants]]
id = "db-read-exact"
server = "db"
tool = "read_rows"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
operations = ["invoke"]
`

func all(string) bool { return true }

func only(ids ...string) func(string) bool {
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	return func(id string) bool { return set[id] }
}

func TestMatch(t *testing.T) {
	p, err := Parse([]byte(matchPolicy), "match.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                    string
		has                     func(string) bool
		server, tool, operation string
		want                    string // "" = no match
	}{
		{"glob before exact in file order wins", all, "db", "read_rows", "invoke", "db-read"},
		{"exact when the earlier glob is not held", only("db-read-exact", "db-any"), "db", "read_rows", "invoke", "db-any"},
		{"later exact grant when it is the only one held", only("db-read-exact"), "db", "read_rows", "invoke", "db-read-exact"},
		{"exact before later glob", all, "db", "write_rows", "invoke", "db-write-exact"},
		{"operation filters", all, "db", "write_rows", "describe", "db-any"},
		{"operation nobody lists", all, "db", "write_rows", "delete", ""},
		{"* does not cross /", all, "db", "admin/drop", "invoke", ""},
		{"glob matches undeclared name", only("db-any"), "db", "anything", "describe", "db-any"},
		{"other server's grants never match", all, "demo", "read_rows", "invoke", ""},
		{"unknown server", all, "nope", "echo", "invoke", ""},
		{"nothing held", only(), "db", "read_rows", "invoke", ""},
		{"builtin exact", all, "demo", "echo", "invoke", "echo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, ok := p.Match(c.has, c.server, c.tool, c.operation)
			switch {
			case c.want == "" && ok:
				t.Errorf("matched %q, want none", g.ID)
			case c.want != "" && (!ok || g.ID != c.want):
				t.Errorf("got %v %v, want %q", g, ok, c.want)
			}
		})
	}
	t.Run("returns the policy's own grant", func(t *testing.T) {
		g, _ := p.Match(all, "demo", "echo", "invoke")
		if g != &p.Grants[4] {
			t.Error("Match returned a copy")
		}
	})
}

func TestLookups(t *testing.T) {
	p, err := Parse([]byte(matchPolicy), "match.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		server, tool string
		want         *Tool
	}{
		{"db", "write_rows", &Tool{Name: "write_rows", Action: "invoke", Category: "data_mutation"}},
		{"db", "echo", nil}, // http servers have only what they declare
		{"demo", "echo", &Tool{Name: "echo", Action: "invoke"}},
		{"demo", "issue_refund", &Tool{Name: "issue_refund", Action: "charge", Category: "financial", Amount: "/amount", Currency: "/currency"}},
		{"demo", "delete_file", &Tool{Name: "delete_file", Action: "delete", Category: "data_mutation"}},
		{"demo", "format_disk", nil},
		{"nope", "echo", nil},
	} {
		t.Run(c.server+"/"+c.tool, func(t *testing.T) {
			got, ok := p.Tool(c.server, c.tool)
			if c.want == nil {
				if ok {
					t.Errorf("found %+v", got)
				}
				return
			}
			if !ok || *got != *c.want {
				t.Errorf("got %+v %v, want %+v", got, ok, c.want)
			}
		})
	}
	t.Run("declared builtin tool wins over the standard one", func(t *testing.T) {
		q, err := Parse([]byte(builtin+"[[servers.tools]]\nname = \"echo\"\naction = \"repeat\"\n"), "t.toml")
		if err != nil {
			t.Fatal(err)
		}
		if tl, _ := q.Tool("s", "echo"); tl.Action != "repeat" {
			t.Errorf("action %q", tl.Action)
		}
	})
	if s, ok := p.Server("db"); !ok || s.URL != "http://127.0.0.1:9003" {
		t.Errorf("Server(db) = %v %v", s, ok)
	}
	if _, ok := p.Server("nope"); ok {
		t.Error("Server(nope) found")
	}
	if g, ok := p.Grant("db-any"); !ok || g.Tool != "*" {
		t.Errorf("Grant(db-any) = %v %v", g, ok)
	}
	if _, ok := p.Grant("nope"); ok {
		t.Error("Grant(nope) found")
	}
	var zero Policy
	if _, ok := zero.Match(all, "db", "read_rows", "invoke"); ok {
		t.Error("a Policy not built by Parse matched")
	}
}

func TestApproverLookups(t *testing.T) {
	p, err := Parse(doc(approvalHead+approverA+approverB), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Grants[0].Approval
	kb, _ := keys.ParsePublicKey(keyB)
	kc, _ := keys.ParsePublicKey(keyC)
	if ap, ok := a.ApproverByKey(kb); !ok || ap.DisplayName != "B" {
		t.Errorf("ApproverByKey(B) = %v %v", ap, ok)
	}
	if _, ok := a.ApproverByKey(kc); ok {
		t.Error("ApproverByKey(C) found")
	}
	if _, ok := a.ApproverByKey(keys.PublicKey{}); ok {
		t.Error("the zero key matched an approver")
	}
	if ap, ok := a.ApproverByName("A"); !ok || ap.PublicKey.String() != keyA {
		t.Errorf("ApproverByName(A) = %v %v", ap, ok)
	}
	if _, ok := a.ApproverByName("a"); ok {
		t.Error("names are case-sensitive")
	}
}

// Tools lists what the policy knows of a server: its declarations, then a
// builtin server's undeclared builtin tools; nothing for an unknown server.
func TestPolicyTools(t *testing.T) {
	p, err := Parse([]byte(`
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
action = "say"

[[servers]]
id = "web"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "lookup"
`), "tools.toml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(server string) (out []string) {
		for _, tool := range p.Tools(server) {
			out = append(out, tool.Name)
		}
		return out
	}
	if got := strings.Join(names("demo"), " "); got != "echo issue_refund confirm ask delete_file" {
		t.Errorf("demo: %s", got)
	}
	if tools := p.Tools("demo"); tools[0].Action != "say" {
		t.Errorf("the declared echo is not the one listed: %+v", tools[0])
	}
	if got := strings.Join(names("web"), " "); got != "lookup" {
		t.Errorf("web: %s", got)
	}
	if got := p.Tools("nope"); got != nil {
		t.Errorf("unknown server: %v", got)
	}
}
