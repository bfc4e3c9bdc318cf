package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// chiod may sit behind a proxy (TLS, a gateway). When the proxy answers a
// tools/call with a JSON-RPC error after chiod received the call (its own
// timeout, a reset stream), the bridge handed its client that error as is:
// no request id. The call was decided and its tool may have run; the
// client's retry is a new request id, and runs it again. As for a lost
// connection, the answer must name the request id to await.
func TestBridgeErrorAfterChiodGotTheCallNamesTheRequestID(t *testing.T) {
	w := newPolicyToolsWorld(t, `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`, []string{"echo"})
	target, err := url.Parse(w.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var sent []string // request ids of the calls passed to chiod
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					Proof CallProof `json:"chio/proof"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if r.Method != http.MethodPost || json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
			rp.ServeHTTP(rw, r)
			return
		}
		// chiod gets the call and answers it; the proxy answers the
		// bridge with an error of its own.
		rp.ServeHTTP(httptest.NewRecorder(), r)
		mu.Lock()
		sent = append(sent, m.Params.Meta.Proof.RequestID)
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"proxy: upstream stream reset"}}`, m.ID)
	}))
	t.Cleanup(proxy.Close)

	cs := bridgeTo(t, proxy.URL, w.Agent, w.CapRaw)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"hello": "world"}})
	mu.Lock()
	ids := append([]string(nil), sent...)
	mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("the call never reached chiod through the proxy")
	}
	rec, rerr := w.Kernel.Call(ids[0])
	if rerr != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("chiod did not decide the call it received: %+v %v", rec, rerr)
	}
	if err != nil {
		t.Fatalf("chiod received and ran call %s (%s), yet the agent gets an error without its request id "+
			"(its retry is a new call): %v", ids[0], rec.Status, err)
	}
	id, _ := r.Meta[MetaRequestID].(string)
	text := resultText(r)
	if !r.IsError || r.Meta[MetaStatus] != StatusUnrecorded || id != ids[0] ||
		!strings.Contains(text, "do not call it again") || !strings.Contains(text, AwaitTool) {
		t.Fatalf("want an isError %q result naming request %s to await: %q %v", StatusUnrecorded, ids[0], text, r.Meta)
	}
}
