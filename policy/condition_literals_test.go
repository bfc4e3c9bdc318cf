package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// A condition that compares tool, server or subject with a name they can
// never hold under its grant is never true: `deny_when = "tool ==
// 'drop_tabel'"` reads as "drop_table is denied" and denies nothing. As a
// misspelt action category is, such a comparison is refused at load: a
// tool name the grant's tool pattern cannot match (or a near miss of a
// declared tool's), another server than the grant's, a subject that is
// not a key as the kernel spells keys (ed25519: and lower-case hex).
func TestConditionComparingWithAnImpossibleNameIsRefused(t *testing.T) {
	const head = `
[[servers]]
id = "db"
transport = "http"
url = "http://127.0.0.1:9003"
[[servers.tools]]
name = "read_rows"
[[servers.tools]]
name = "drop_table"

[[grants]]
id = "db"
server = "db"
tool = "TOOL"
[grants.constraints]
deny_when = [COND]
`
	doc := func(tool, cond string) []byte {
		return []byte(strings.NewReplacer("TOOL", tool, "COND", cond).Replace(head))
	}
	for _, c := range []struct{ tool, cond, want string }{
		{"*", `"tool == 'drop_tabel'"`, `tool is compared with "drop_tabel"`},
		{"*", `"tool in ['read_rows', 'Drop_Table']"`, `tool is compared with "Drop_Table"`},
		{"read_*", `"tool == 'drop_table'"`, `tool is compared with "drop_table"`},
		{"*", `"server == 'database'"`, `server is compared with "database"`},
		{"*", `"subject == 'ed25519:392EDA50F5C5DD24F3FEF6C0F1F44A598B4B6E293B407A39B1D9AA3193B875ED'"`, `subject is compared with`},
	} {
		_, err := policy.Parse(doc(c.tool, c.cond), "db.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "never") {
			t.Errorf("tool = %q, deny_when = %s: err = %v; want it refused (%s…never…)", c.tool, c.cond, err, c.want)
		}
	}
	for _, c := range []struct{ tool, cond string }{
		{"*", `"tool == 'drop_table'"`},
		{"*", `"tool == 'export_all'"`}, // not declared, nor near a declared name: an http server's other tool
		{"*", `"tool != 'drop_tabel'"`}, // always true: denies more, never less
		{"*", `"server == 'db' && subject == 'ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed'"`},
		{"drop_*", `"tool in ['drop_table', 'drop_index']"`},
	} {
		if _, err := policy.Parse(doc(c.tool, c.cond), "db.toml"); err != nil {
			t.Errorf("tool = %q, deny_when = %s: %v", c.tool, c.cond, err)
		}
	}
}
