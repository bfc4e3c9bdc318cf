package mcpgw

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// direct connects a go-sdk client straight to /mcp with a bearer.
func (w *gwWorld) direct(token string) (*mcpsdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &mcpsdk.StreamableClientTransport{Endpoint: w.URL + Path, HTTPClient: &http.Client{Transport: bearerRT{token}}, MaxRetries: -1}
	return mcpsdk.NewClient(&mcpsdk.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, tr, nil)
}

func TestSessionAuth(t *testing.T) {
	w := newGatewayWorld(t)
	now := time.Now()
	aud := w.Kernel.PublicKey().String()
	good, err := SignSession(w.Agent, w.CapRaw, aud, now, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := keys.Generate(nil)
	otherKernel, _ := keys.Generate(nil)
	sign := func(k keys.PrivateKey, audience string, at time.Time, ttl time.Duration) string {
		s, err := SignSession(k, w.CapRaw, audience, at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	revokedCap, revokedC, err := w.Kernel.IssueCapability(w.Agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.Revoke(context.Background(), revokedC.ID); err != nil {
		t.Fatal(err)
	}
	revoked, _ := SignSession(w.Agent, revokedCap, aud, now, time.Minute)
	tampered := []byte(good)
	tampered[len(tampered)/2] ^= 1
	for name, token := range map[string]string{
		"none":            "",
		"garbage":         "not-a-token",
		"other kernel":    sign(w.Agent, otherKernel.Public().String(), now, time.Minute),
		"not the subject": sign(stranger, aud, now, time.Minute),
		"expired":         sign(w.Agent, aud, now.Add(-20*time.Minute), 10*time.Minute),
		"future":          sign(w.Agent, aud, now.Add(10*time.Minute), time.Minute),
		"tampered":        string(tampered),
		"revoked":         revoked,
		"oversized":       strings.Repeat("A", MaxSessionTokenBytes+1),
	} {
		t.Run(name, func(t *testing.T) {
			if cs, err := w.direct(token); err == nil {
				cs.Close()
				t.Fatal("connected")
			}
		})
	}
	if _, err := SignSession(w.Agent, w.CapRaw, aud, now, 2*time.Hour); err == nil {
		t.Fatal("a two-hour session token was signed")
	}

	cs, err := w.direct(good)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 2 {
		t.Fatalf("tools: %v %v", res, err)
	}
	// A generic client with a valid session but no per-call proof cannot call.
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "x"}})
	if err != nil || !r.IsError || r.Meta[MetaStatus] != StatusRefused || !strings.Contains(r.Content[0].(*mcpsdk.TextContent).Text, "chio mcp serve") {
		t.Fatalf("unsigned call: %+v %v", r, err)
	}
	// A proof for other arguments than those sent does not verify.
	ph, _ := kernel.ParameterHash("everything", "echo", []byte(`{"message":"approved text"}`), nil)
	p, _ := kernel.SignProof(w.Agent, "req-swap", w.Cap.ID, "everything", "echo", ph, time.Now())
	r, err = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "other text"},
		Meta: mcpsdk.Meta{MetaProof: CallProof{RequestID: "req-swap", IssuedAt: p.IssuedAt, Signature: p.Signature}}})
	if err != nil || !r.IsError || r.Meta[MetaStatus] != StatusRefused {
		t.Fatalf("swapped arguments: %+v %v", r, err)
	}
}

func TestBridgeCall(t *testing.T) {
	w := newGatewayWorld(t)
	cs := w.bridge(t)
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "in-process"}})
	if err != nil || r.IsError || r.Content[0].(*mcpsdk.TextContent).Text != "Echo: in-process" {
		t.Fatalf("%+v %v", r, err)
	}
	// Amendments and POST /v1/calls meet the schema too: the kernel's
	// guard (wired by chiod) denies what the gateway would refuse.
	g := mcpGuard(w)
	c := w.CallAs(t, w.Agent, w.CapRaw, "everything", "echo", `{"message":7}`, "")
	if res, _ := g.Check(&kernel.Request{Call: c}); res.Verdict != kernel.Deny {
		t.Fatalf("guard: %+v", res)
	}
}
