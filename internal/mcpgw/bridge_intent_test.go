package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// refundsPolicy is the quick start's refunds grant
// (examples/policies/quickstart.toml): the builtin issue_refund, its amount
// read from the arguments, a governed intent required. Server "shop" has
// the same tool under a grant with no constraints: an intent is optional
// there, and its max_amount, when declared, the only bound.
func refundsPolicy(approver keys.PublicKey) string {
	return fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"

[[servers.tools]]
name = "issue_refund"
action = "charge"
category = "financial"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
channels = ["poll"]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"

[[servers]]
id = "shop"
transport = "builtin"

[[servers.tools]]
name = "issue_refund"
action = "charge"
category = "financial"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "open-refunds"
server = "shop"
tool = "issue_refund"
`, approver)
}

// sentCall is one tools/call the bridge POSTed to chiod: its request id
// and the governed intent member exactly as sent (nil when absent).
type sentCall struct {
	requestID string
	intent    []byte
}

// callRecorder is the bridge's HTTP transport to chiod: it records each
// tools/call, and can lose the answer to the first one after chiod has
// handled it (the connection drops on the way back).
type callRecorder struct {
	mu        sync.Mutex
	calls     []sentCall
	loseFirst bool
}

func (c *callRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var call *sentCall
	if r.Method == http.MethodPost && r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta struct {
					Proof CallProof `json:"chio/proof"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &msg) == nil && msg.Method == "tools/call" {
			call = &sentCall{requestID: msg.Params.Meta.Proof.RequestID}
			if raw, ok := intentMember(data); ok {
				call.intent = bytes.Clone(raw)
			}
		}
	}
	c.mu.Lock()
	lose := call != nil && c.loseFirst && len(c.calls) == 0
	if call != nil {
		c.calls = append(c.calls, *call)
	}
	c.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !lose {
		return resp, err
	}
	// chiod has decided and answered; the answer is lost on the way back.
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset by peer (test)")
}

func (c *callRecorder) sent() []sentCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sentCall(nil), c.calls...)
}

// intentWorld is chiod with the quick start's refunds grant, and a go-sdk
// client connected to a Bridge whose traffic to chiod is recorded.
type intentWorld struct {
	*policyToolsWorld
	rec *callRecorder
	cs  *mcpsdk.ClientSession
}

func newIntentWorld(t *testing.T, rec *callRecorder) *intentWorld {
	t.Helper()
	approver, _ := keys.Generate(nil)
	w := newPolicyToolsWorld(t, refundsPolicy(approver.Public()), []string{"refunds", "open-refunds"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw, PendingWait: time.Millisecond,
		HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "intent-agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &intentWorld{policyToolsWorld: w, rec: rec, cs: cs}
}

// refund calls tool (an issue_refund) through the bridge, with intent (if not
// nil) in _meta["chio/governed_intent"], as an agent on an MCP SDK would.
func (w *intentWorld) refund(t *testing.T, tool string, units int, intent any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcpsdk.CallToolParams{Name: tool,
		Arguments: map[string]any{"customer_id": "cust-9012", "amount": units, "currency": "USD"}}
	if intent != nil {
		params.Meta = mcpsdk.Meta{MetaIntent: intent}
	}
	r, err := w.cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	return r
}

// ledgerLines is how many refunds the builtin demo server has issued.
func (w *intentWorld) ledgerLines(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dataDir, "builtin", "ledger.jsonl"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// An agent on an MCP SDK declares its governed intent in
// _meta["chio/governed_intent"] of its tools/call through `chio mcp serve`:
// the bridge signs it into the parameter hash and forwards it, so a grant
// that requires an intent admits the call, the intent is recorded as
// declared, and its max_amount is an envelope the arguments must stay
// within. A call without an intent is still denied.
func TestBridgeForwardsGovernedIntent(t *testing.T) {
	w := newIntentWorld(t, &callRecorder{})
	intent := map[string]any{"purpose": "refund order 1234", "max_amount": map[string]any{"units": 100, "currency": "USD"}}

	r := w.refund(t, "demo__issue_refund", 50, intent)
	if r.IsError || !strings.Contains(resultText(r), `"status":"issued"`) {
		t.Fatalf("a refund within its declared intent: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}
	sent := w.rec.sent()
	want := `{"max_amount":{"currency":"USD","units":100},"purpose":"refund order 1234"}`
	if len(sent) != 1 || string(sent[0].intent) != want {
		t.Fatalf("sent to chiod: %+v; want one call with the intent %s", sent, want)
	}
	rec, err := w.Kernel.Call(sent[0].requestID)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Intent) != want {
		t.Fatalf("recorded intent %s, want %s", rec.Intent, want)
	}

	// The envelope: 150 units against a max_amount of 100.
	r = w.refund(t, "demo__issue_refund", 150, intent)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusDenied || r.Meta[MetaGuard] != kernel.GuardIntentEnvelope {
		t.Fatalf("a refund over its intent's max_amount: %v %q; want denied by %s", r.Meta, resultText(r), kernel.GuardIntentEnvelope)
	}

	// Where the grant does not require an intent, the declared max_amount
	// is still imposed: not dropped on the way, letting the refund run.
	r = w.refund(t, "shop__issue_refund", 150, intent)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusDenied || r.Meta[MetaGuard] != kernel.GuardIntentEnvelope {
		t.Fatalf("a refund over its intent's max_amount, intent optional: %v %q; want denied by %s", r.Meta, resultText(r), kernel.GuardIntentEnvelope)
	}

	// No intent: as before, denied by the grant.
	r = w.refund(t, "demo__issue_refund", 50, nil)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusDenied || r.Meta[MetaGuard] != kernel.GuardIntentRequired {
		t.Fatalf("a refund without an intent: %v %q", r.Meta, resultText(r))
	}
	if sent := w.rec.sent(); len(sent) != 4 || sent[3].intent != nil {
		t.Fatalf("a call without an intent was sent with one: %+v", sent)
	}
	if n := w.ledgerLines(t); n != 1 {
		t.Fatalf("%d refunds issued; want 1", n)
	}
}

// An intent the bridge cannot sign as the agent meant it is refused there,
// with a result saying why, and nothing is sent to chiod: one that is not
// a JSON object; one with an integer the decoding may have rounded (at or
// beyond 2^53: signing it would sign a different amount); one the kernel's
// own intent decoding refuses. JSON null is no intent, as on POST
// /v1/calls.
func TestBridgeRefusesIntentItCannotSignExactly(t *testing.T) {
	w := newIntentWorld(t, &callRecorder{})
	const twoTo53 = 1 << 53
	for _, tc := range []struct {
		name   string
		intent any
	}{
		{"a string", "refund order 1234"},
		{"an array", []any{"refund order 1234"}},
		{"a number", 5},
		{"units past 2^53, rounded by the decode", map[string]any{"purpose": "refund",
			"max_amount": map[string]any{"units": int64(twoTo53 + 1), "currency": "USD"}}},
		{"units of 2^53, which 2^53+1 also decodes to", map[string]any{"purpose": "refund",
			"max_amount": map[string]any{"units": int64(twoTo53), "currency": "USD"}}},
		{"a huge negative number in context", map[string]any{"purpose": "refund", "context": map[string]any{"n": -float64(1 << 60)}}},
		{"fractional units", map[string]any{"purpose": "refund", "max_amount": map[string]any{"units": 1.5, "currency": "USD"}}},
		{"negative units", map[string]any{"purpose": "refund", "max_amount": map[string]any{"units": -1, "currency": "USD"}}},
		{"max_amount without a currency", map[string]any{"purpose": "refund", "max_amount": map[string]any{"units": 5}}},
		{"an unknown member", map[string]any{"purpose": "refund", "budget": 5}},
		{"a case-folded member name", map[string]any{"Purpose": "refund"}},
		{"a purpose that hides text", map[string]any{"purpose": "refund \u202eredro"}},
		{"an over-long purpose", map[string]any{"purpose": strings.Repeat("a", kernel.MaxPurposeLen+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.rec.sent())
			r := w.refund(t, "demo__issue_refund", 50, tc.intent)
			if !r.IsError || r.Meta[MetaStatus] != StatusRefused || !strings.Contains(resultText(r), "governed_intent") {
				t.Fatalf("intent %#v: %v %q; want a refusal naming the governed intent", tc.intent, r.Meta, resultText(r))
			}
			if sent := w.rec.sent(); len(sent) != before {
				t.Fatalf("a refused intent was sent to chiod: %+v", sent[before:])
			}
		})
	}
	if n := w.ledgerLines(t); n != 0 {
		t.Fatalf("%d refunds issued; want none", n)
	}

	// Exact values pass, HTML-significant characters and fractions in
	// context included; the record holds the canonical form.
	r := w.refund(t, "demo__issue_refund", 50, map[string]any{"purpose": "refund <order> & co",
		"context": map[string]any{"rate": 0.5, "big": twoTo53 - 1}})
	if r.IsError {
		t.Fatalf("an exact intent was refused: %v %q", r.Meta, resultText(r))
	}
	sent := w.rec.sent()
	rec, err := w.Kernel.Call(sent[len(sent)-1].requestID)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"context":{"big":9007199254740991,"rate":0.5},"purpose":"refund <order> & co"}`
	if got := sent[len(sent)-1].intent; string(rec.Intent) != want || string(got) != want {
		t.Fatalf("sent intent %s, recorded %s; want %s for both", got, rec.Intent, want)
	}

	// null: no intent, so the grant denies the call.
	r = w.refund(t, "demo__issue_refund", 50, json.RawMessage("null"))
	if !r.IsError || r.Meta[MetaGuard] != kernel.GuardIntentRequired {
		t.Fatalf("a null intent: %v %q", r.Meta, resultText(r))
	}
}

// A call whose answer is lost on the way back is asked again with the same
// request id and the same intent bytes (the proof re-signed): chiod answers
// the repeat with the first call's outcome, and the refund is issued once.
func TestBridgeRetrySendsSameIntent(t *testing.T) {
	w := newIntentWorld(t, &callRecorder{loseFirst: true})
	r := w.refund(t, "demo__issue_refund", 50, map[string]any{"purpose": "refund order 1234",
		"max_amount": map[string]any{"units": 100, "currency": "USD"}})
	if r.IsError || !strings.Contains(resultText(r), `"status":"issued"`) {
		t.Fatalf("retried refund: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}
	sent := w.rec.sent()
	if len(sent) != 2 || sent[0].requestID == "" || sent[1].requestID != sent[0].requestID ||
		len(sent[0].intent) == 0 || !bytes.Equal(sent[1].intent, sent[0].intent) {
		t.Fatalf("sent to chiod: %+v; want the same request id and intent twice", sent)
	}
	if n := w.ledgerLines(t); n != 1 {
		t.Fatalf("%d refunds issued; want 1", n)
	}
}
