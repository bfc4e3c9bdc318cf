package policy

import (
	"strings"
	"testing"
)

func TestScanPositions(t *testing.T) {
	src := `# comment [not.a.table]
title = "a # not a comment"     # line 2
multi = """
[not.a.table]
key = "inside a string"
"""
lit = '''
\"""
'''
after = 1                       # line 10
"quoted.key" = 2
dotted.inner.leaf = 3           # line 12
list = [
  "x",                          # line 14
  # comment ] inside
  [1, 2],                       # line 16
  { name = "t", deep = { k = 1 } },
]
inline = {
  a = 1,                        # line 20 (TOML 1.1)
}

[[grants]]                      # line 23
id = "one"
[grants.approval]               # line 25
[[grants.approval.approvers]]   # line 26
name = "a"
[[grants.approval.approvers]]   # line 28
name = "b"                      # line 29

[[grants]]                      # line 31
id = "two"
[[grants.approval.approvers]]   # line 33
name = "c"
[ grants . "x.y" ]              # line 35
z = 'w'
`
	pos, deep := scanPositions([]byte(src))
	if deep != 0 {
		t.Fatalf("deep = %d", deep)
	}
	want := map[string]int{
		"title":                                2,
		"multi":                                3,
		"lit":                                  7,
		"after":                                10,
		"quoted.key":                           11,
		"dotted/inner":                         12,
		"dotted/inner/leaf":                    12,
		"list/0":                               14,
		"list/1":                               16,
		"list/1/1":                             16,
		"list/2/name":                          17,
		"list/2/deep/k":                        17,
		"inline/a":                             20,
		"grants":                               23,
		"grants/0":                             23,
		"grants/0/id":                          24,
		"grants/0/approval":                    25,
		"grants/0/approval/approvers/0":        26,
		"grants/0/approval/approvers/1":        28,
		"grants/0/approval/approvers/1/name":   29,
		"grants/1":                             31,
		"grants/1/approval/approvers/0":        33,
		"grants/1/approval/approvers/0/name":   34,
		"grants/1/x.y/z":                       36,
		"grants/1/approval/approvers/0/absent": 33, // missing keys fall back to their table
		"nothing/here":                         0,
	}
	for path, line := range want {
		if got := pos.line(strings.Split(path, "/")); got != line {
			t.Errorf("%s: line %d, want %d", path, got, line)
		}
	}
	if _, ok := pos.lines[pathKey(k("not", "a", "table"))]; ok {
		t.Error("a table header inside a comment or string was recorded")
	}
}

func TestScanDepth(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		deep int
	}{
		{"flat", "a = 1\n", 0},
		{"deep arrays", "\n\na = " + strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5), 3},
		{"deep inline tables", "a = " + strings.Repeat("{b=", 40) + "1" + strings.Repeat("}", 40), 1},
		{"long dotted key", "x = 1\n" + strings.Repeat("a.", 40) + "b = 1\n", 2},
		{"long header", "[" + strings.Repeat("a.", 40) + "b]\n", 1},
		{"nesting at the limit", "a = " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1), 0},
		{"brackets in strings do not count", "a = \"" + strings.Repeat("[{", 100) + "\"\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, deep := scanPositions([]byte(c.src)); deep != c.deep {
				t.Errorf("deep = %d, want %d", deep, c.deep)
			}
		})
	}
}
