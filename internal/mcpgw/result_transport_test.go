package mcpgw

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// An http tool's JSON output reaches the client whole, as text, whatever
// its members: a paginated API's {"content": [...], "total": N} (Spring's
// Page, many CMSs) is not an MCP result, and reading it as one dropped
// every other member (an empty content list became an empty result).
func TestHTTPToolOutputWithContentMemberIsText(t *testing.T) {
	var body atomic.Pointer[string]
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, *body.Load())
	}))
	t.Cleanup(toolSrv.Close)
	text := fmt.Sprintf(`
[[servers]]
id = "web"
transport = "http"
url = %q

[[servers.tools]]
name = "search"

[[grants]]
id = "web"
server = "web"
tool = "search"
`, toolSrv.URL)
	w := newPolicyToolsWorld(t, text, []string{"web"})
	cs := w.bridge(t)
	for _, out := range []string{`{"content":[],"total":0}`,
		`{"content":[{"type":"text","text":"page 1"}],"next":"cursor-2"}`} {
		body.Store(&out)
		r := callTool(t, cs, "web__search", map[string]any{"q": "chio"})
		got := resultText(r)
		if r.IsError || !strings.Contains(got, `"content"`) || (!strings.Contains(got, `"total":0`) && !strings.Contains(got, `"next":"cursor-2"`)) {
			t.Errorf("http tool answered %s; the client got isError %v, %d content items, text %q", out, r.IsError, len(r.Content), got)
		}
	}
}
