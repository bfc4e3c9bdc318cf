package mcp

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/policy"
)

// "A server listing more than 1,000 tools is refused whole" (docs/mcp.md):
// the limit bounds what chio compiles, logs and holds for one list, so it
// counts every tool listed. Counting only those offered let an upstream
// list any number beyond it, as long as the extra ones were refused one
// by one (a bad name, a schema that does not compile), each compiled and
// logged at every list_changed.
func TestListOverMaxToolsCountsToolsNotOffered(t *testing.T) {
	var b strings.Builder
	b.WriteString(`[{"name":"bad name","inputSchema":{"type":"object"}}`)
	for i := range MaxTools {
		fmt.Fprintf(&b, `,{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	b.WriteString("]")
	srv := httptest.NewServer(&rawMCP{tools: b.String()})
	t.Cleanup(srv.Close)
	s, err := NewSet([]policy.Server{{ID: "big", Transport: policy.TransportMCP, URL: srv.URL + "/mcp"}}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	u, _ := s.Upstream("big")
	mcptest.Eventually(t, 20*time.Second, "the first tools/list", func() bool {
		return u.Ready() || strings.Contains(u.downReason(), "tools/list")
	})
	if u.Ready() || len(u.Tools()) > 0 {
		t.Fatalf("a list of %d tools was accepted (%d offered)", MaxTools+1, len(u.Tools()))
	}
	if !strings.Contains(u.downReason(), fmt.Sprintf("more than %d tools", MaxTools)) {
		t.Fatalf("down because %q", u.downReason())
	}
}
