package policy

import (
	"strings"
	"testing"
)

func TestMCPServers(t *testing.T) {
	ok := []string{
		`[[servers]]
id = "fs"
transport = "mcp"
command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv"]

[[grants]]
id = "read"
server = "fs"
tool = "read_file"   # discovered at run time: no [[servers.tools]] needed
`,
		`[[servers]]
id = "web"
transport = "mcp"
url = "https://mcp.example.com/mcp"
[[servers.tools]]
name = "send_email"
category = "communication"
`,
	}
	for i, d := range ok {
		p, err := Parse([]byte(d), "mcp.toml")
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if p.Servers[0].Transport != TransportMCP {
			t.Fatalf("case %d: transport %q", i, p.Servers[0].Transport)
		}
	}
	bad := []struct{ name, doc, want string }{
		{"both", "[[servers]]\nid = \"x\"\ntransport = \"mcp\"\ncommand = [\"srv\"]\nurl = \"http://127.0.0.1:1/mcp\"", "has both command and url"},
		{"neither", "[[servers]]\nid = \"x\"\ntransport = \"mcp\"", "needs command"},
		{"empty program", "[[servers]]\nid = \"x\"\ntransport = \"mcp\"\ncommand = [\" \"]", "must name a program"},
		{"bad url", "[[servers]]\nid = \"x\"\ntransport = \"mcp\"\nurl = \"ftp://host/mcp\"", "http://"},
		{"command on http", "[[servers]]\nid = \"x\"\ntransport = \"http\"\nurl = \"http://127.0.0.1:1\"\ncommand = [\"srv\"]", "command is for transport"},
		{"nul", "[[servers]]\nid = \"x\"\ntransport = \"mcp\"\ncommand = [\"srv\", \"a\\u0000b\"]", "without NUL"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "mcp.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
