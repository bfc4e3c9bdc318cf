package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// intentPlaceholder is replaced, in the encoded tools/call, by the raw
// intent bytes under test: the go-sdk client cannot itself send a
// duplicate member name or an over-long number.
const intentPlaceholder = `"INTENT-PLACEHOLDER"`

// rawIntentClient signs sessions like the bridge and splices raw bytes
// into each tools/call it sends.
type rawIntentClient struct {
	bearer string
	raw    []byte
}

func (c *rawIntentClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.bearer)
	if r.Body != nil && r.Method == http.MethodPost {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		data = bytes.Replace(data, []byte(intentPlaceholder), c.raw, 1)
		r.Body, r.ContentLength, r.GetBody = io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The governed intent in _meta reaches the kernel as the bytes the agent
// sent: its strict decoder refuses a duplicate member, a case-folded name
// or an unsafe number there exactly as on POST /v1/calls (the SDK's decoded
// _meta would have collapsed or rounded them), and a well-formed intent is
// recorded as signed.
func TestGovernedIntentReachesKernelAsSent(t *testing.T) {
	up := &rawUp{tools: benignPay, onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid"}]}}`, id)
	}}
	w := newRawWorld(t, up, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	client := &rawIntentClient{bearer: bearer}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "intent-test", Version: "1"}, nil).Connect(ctx,
		&mcpsdk.StreamableClientTransport{Endpoint: w.URL + Path, HTTPClient: &http.Client{Transport: client}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(`{"amount":5}`)
	call := func(t *testing.T, raw, signed string) (*mcpsdk.CallToolResult, string) {
		t.Helper()
		client.raw = []byte(raw)
		requestID := kernel.NewID("mcp-")
		ph, err := kernel.ParameterHash("bank", "pay", args, json.RawMessage(signed))
		if err != nil {
			t.Fatal(err)
		}
		p, err := kernel.SignProof(w.Agent, requestID, w.Cap.ID, "bank", "pay", ph, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: args, Meta: mcpsdk.Meta{
			MetaProof:  CallProof{RequestID: requestID, IssuedAt: p.IssuedAt, Signature: p.Signature},
			MetaIntent: strings.Trim(intentPlaceholder, `"`)}})
		if err != nil {
			t.Fatal(err)
		}
		return r, requestID
	}
	for _, tc := range []struct{ name, raw, signed string }{
		// Signed over what a lossy decoding would make of it.
		{"duplicate member", `{"purpose":"refund","purpose":"drain"}`, `{"purpose":"drain"}`},
		{"case-folded name", `{"Purpose":"refund"}`, `{"purpose":"refund"}`},
		{"unsafe number", `{"purpose":"refund","context":{"n":9007199254740993}}`, `{"purpose":"refund","context":{"n":9007199254740992}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, requestID := call(t, tc.raw, tc.signed)
			if !r.IsError || r.Meta[MetaStatus] != StatusRefused {
				t.Fatalf("intent %s was not refused: %v %v", tc.raw, r.Content[0].(*mcpsdk.TextContent).Text, r.Meta)
			}
			if _, err := w.Kernel.Call(requestID); err == nil {
				t.Fatalf("a refused call left a record")
			}
		})
	}
	t.Run("well formed", func(t *testing.T) {
		raw := `{"purpose": "refund order 1", "max_amount": {"units": 5, "currency": "USD"}}`
		r, requestID := call(t, raw, raw)
		if r.IsError {
			t.Fatalf("refused: %v %v", r.Content[0].(*mcpsdk.TextContent).Text, r.Meta)
		}
		rec, err := w.Kernel.Call(requestID)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"max_amount":{"currency":"USD","units":5},"purpose":"refund order 1"}`; string(rec.Intent) != want {
			t.Fatalf("recorded intent %s, want %s", rec.Intent, want)
		}
	})
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once (the well-formed call)", n)
	}
}

// An intent the SDK decoded but the gateway could not capture exactly (a
// batch, an escaped member name, a duplicate name in _meta) is refused,
// never re-encoded; a capture a client forged in the header is discarded.
func TestGovernedIntentNotCapturedIsRefused(t *testing.T) {
	meta := mcpsdk.Meta{MetaIntent: map[string]any{"purpose": "refund"}}
	if _, err := rawIntent(meta, http.Header{}); err == nil {
		t.Fatal("an intent without its exact bytes was accepted")
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"chio/governed_intent":{"a":1},"chio/governed_intent":{"a":2}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"chio\/governed_intent":{"a":1}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"chio/governed_intent":{"a":1}}}}]`,
	} {
		r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(intentHeader, "e30") // {} — forged by the client
		if err := withRawIntent(httptest.NewRecorder(), r, time.Second); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(intentHeader); got != "" {
			t.Errorf("body %s: captured %q", body, got)
		}
		if rest, _ := io.ReadAll(r.Body); string(rest) != body {
			t.Errorf("body changed: %s", rest)
		}
	}
}
