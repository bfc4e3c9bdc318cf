package mcpgw

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/mcptest"
)

// A tool's annotations are hints clients act on (a client may run a
// readOnlyHint tool without asking its user). When an upstream changes
// only a tool's annotations — "read only" becomes "destructive" — the
// agents' lists must follow, as they do for a changed description or
// schema: chio must not go on offering the hint the upstream withdrew.
func TestChangedToolAnnotationsAreOffered(t *testing.T) {
	const readOnly = `[{"name":"pay","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`
	const destructive = `[{"name":"pay","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true}}]`
	up := &rawUp{tools: readOnly, listChan: make(chan struct{}, 1),
		onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {}}
	w := newRawWorld(t, up, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := &mcpsdk.StreamableClientTransport{Endpoint: w.URL + Path, HTTPClient: &http.Client{Transport: bearerRT{bearer}}, MaxRetries: -1}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "annotations-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if pay := listedTools(t, cs)["bank__pay"]; pay == nil || pay.Annotations == nil || !pay.Annotations.ReadOnlyHint {
		t.Fatalf("bank__pay is not offered as read only: %+v", pay)
	}

	up.setTools(destructive)
	up.listChan <- struct{}{} // notifications/tools/list_changed
	u, _ := w.router.MCP().Upstream("bank")
	mcptest.Eventually(t, 10*time.Second, "the catalogue to list the new annotations", func() bool {
		t, ok := u.Tool("pay")
		return ok && t.Annotations != nil && t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint
	})
	pay := listedTools(t, cs)["bank__pay"] // each tools/list re-derives the list
	if pay == nil || pay.Annotations == nil || pay.Annotations.ReadOnlyHint ||
		pay.Annotations.DestructiveHint == nil || !*pay.Annotations.DestructiveHint {
		t.Fatalf("the upstream now says bank__pay is destructive, yet chio offers it with annotations %+v", pay.Annotations)
	}
}
