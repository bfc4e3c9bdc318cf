package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestHTTPContract(t *testing.T) {
	work := t.TempDir()
	d := startDaemon(t, filepath.Join(repoRoot(), "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	a := newAgent(t, d, "echo", "files")
	ctx := context.Background()

	code, out, err := postCall(ctx, http.DefaultClient, d.url, a.call(t, "req-allowed-1", "demo", "echo", `{"x":1}`, ""))
	if err != nil || code != 200 || out.Status != "allowed" || string(out.Output) != `{"echo":{"x":1}}` {
		t.Fatalf("allowed: %d %+v %v", code, out, err)
	}
	code, out, _ = postCall(ctx, http.DefaultClient, d.url, a.call(t, "req-denied-1", "demo", "delete_file", `{"path":"/etc/shadow"}`, ""))
	if code != 403 || out.Status != "denied" || out.Guard != "forbidden_paths" || out.ReceiptID == "" {
		t.Fatalf("denied: %d %+v", code, out)
	}
	// A retry with the same request id answers the stored outcome.
	code, again, _ := postCall(ctx, http.DefaultClient, d.url, a.call(t, "req-allowed-1", "demo", "echo", `{"x":1}`, ""))
	if code != 200 || again.ReceiptID == "" {
		t.Fatalf("idempotent retry: %d %+v", code, again)
	}
	// The same request id for another call conflicts.
	if code, _, _ := postCall(ctx, http.DefaultClient, d.url, a.call(t, "req-allowed-1", "demo", "echo", `{"x":2}`, "")); code != 409 {
		t.Fatalf("reused request id: %d", code)
	}

	raw := func(method, path, body, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	cases := []struct {
		name, method, path, body, token string
		status                          int
		code                            string
	}{
		{"oversized body", "POST", "/v1/calls", `{"request_id":"` + strings.Repeat("x", 2<<20) + `"}`, "", 413, "bad_request"},
		{"duplicate keys", "POST", "/v1/calls", `{"request_id":"a","request_id":"b"}`, "", 400, "bad_request"},
		{"unknown field", "POST", "/v1/calls", `{"request_id":"a","bogus":1}`, "", 400, "bad_request"},
		{"bad capability", "POST", "/v1/calls", `{"request_id":"a","capability":{"id":"x"},"server":"demo","tool":"echo","arguments":{},"proof":{"issued_at":1,"signature":"00"}}`, "", 401, "unauthorized"},
		{"receipts need a token", "GET", "/v1/receipts", "", "", 401, "unauthorized"},
		{"receipts reject a wrong token", "GET", "/v1/receipts", "", "nope", 401, "unauthorized"},
		{"admin route needs a token", "POST", "/v1/capabilities", `{}`, "", 401, "unauthorized"},
		{"unknown receipt", "GET", "/v1/receipts/rc-nope", "", d.token, 404, "not_found"},
		{"bad decision filter", "GET", "/v1/receipts?decision=maybe", "", d.token, 400, "bad_request"},
		{"capability for unknown grant", "POST", "/v1/capabilities", `{"subject":"` + a.key.Public().String() + `","grants":["nope"],"ttl":"1h"}`, d.token, 400, "bad_request"},
		{"unknown route", "GET", "/v2/calls", "", "", 404, "not_found"},
		{"wrong method", "PUT", "/v1/calls", "{}", "", 405, "bad_request"},
		{"capability for weak key", "POST", "/v1/capabilities", `{"subject":"ed25519:0100000000000000000000000000000000000000000000000000000000000000","grants":["echo"],"ttl":"1h"}`, d.token, 400, "bad_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := raw(c.method, c.path, c.body, c.token)
			if status != c.status || body["error"] != c.code {
				t.Fatalf("got %d %v, want %d %s", status, body, c.status, c.code)
			}
		})
	}

	// Revocation is immediate and durable.
	if code := d.do(t, "POST", "/v1/capabilities/"+a.capID+"/revoke", nil, nil); code != 200 {
		t.Fatalf("revoke: %d", code)
	}
	code, out, _ = postCall(ctx, http.DefaultClient, d.url, a.call(t, "req-after-revoke", "demo", "echo", `{}`, ""))
	if code != 403 || out.Guard != "capability" {
		t.Fatalf("after revoke: %d %+v", code, out)
	}
	// Metrics are Prometheus text, for a token holder (chiod -metrics-auth
	// none opens them).
	if resp, err := http.Get(d.url + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("metrics without a token: %v %v", resp, err)
	}
	req, _ := http.NewRequest("GET", d.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, series := range []string{`chio_decisions_total{verdict="allowed"}`, "chio_decision_seconds_bucket", "chio_commit_batch_size_bucket", "chio_commit_queue_depth", `chio_commit_phase_seconds_total{phase="sign"}`, `chio_commit_phase_seconds_total{phase="write"}`} {
		if !strings.Contains(buf.String(), series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}
