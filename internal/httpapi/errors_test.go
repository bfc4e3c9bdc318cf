package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
)

// Unknown routes and methods answer in the API's error envelope, and a
// 404 says which id was not found.
func TestErrorEnvelopeForEveryMiss(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditPolicy, auditApprover.Public()), Serve: true, ReadToken: strings.Repeat("r", 32)})
	for _, c := range []struct {
		method, path string
		status       int
		code, msg    string
		allow        string
	}{
		{"GET", "/nope", 404, "not_found", "no route GET /nope", ""},
		{"GET", "/v1/nope/deeper", 404, "not_found", "no route GET /v1/nope/deeper", ""},
		{"POST", "/healthz", 405, "bad_request", "POST is not allowed on /healthz (allowed: GET, HEAD)", "GET, HEAD"},
		{"DELETE", "/v1/calls", 405, "bad_request", "DELETE is not allowed on /v1/calls (allowed: POST)", "POST"},
		{"GET", "/approvals/ar-0000/respond", 405, "bad_request", "allowed: POST", "POST"},
		{"GET", "/approvals/ar-missing", 404, "not_found", `approval request "ar-missing" not found`, ""},
		{"GET", "/v1/receipts/rc-missing", 404, "not_found", `receipt "rc-missing" not found`, ""},
		{"GET", "/v1/calls/req-missing", 404, "not_found", `call "req-missing" not found`, ""},
		{"DELETE", "/approvals/batch/ba-missing", 404, "not_found", `standing approval "ba-missing" not found`, ""},
		{"POST", "/approvals/ar-missing/respond", 404, "not_found", `approval request "ar-missing" not found`, ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			body := strings.NewReader("")
			if c.method == "POST" && strings.HasSuffix(c.path, "/respond") {
				body = strings.NewReader(`{"token":{"id":"at-1"}}`)
			}
			req, _ := http.NewRequest(c.method, w.URL+c.path, body)
			req.Header.Set("Authorization", "Bearer "+w.AdminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct{ Error, Message string }
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("not the envelope: %v %s", err, resp.Header.Get("Content-Type"))
			}
			if resp.StatusCode != c.status || e.Error != c.code || !strings.Contains(e.Message, c.msg) || resp.Header.Get("Allow") != c.allow {
				t.Fatalf("%d %+v Allow=%q", resp.StatusCode, e, resp.Header.Get("Allow"))
			}
		})
	}
}

// /metrics takes the reader or admin token (httpapi.Config.MetricsPublic
// opens it); an approver session is not enough.
func TestMetricsNeedAToken(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditPolicy, auditApprover.Public()), Serve: true, ReadToken: strings.Repeat("r", 32)})
	for token, want := range map[string]int{"": 401, "wrong": 401, w.ReadToken: 200, w.AdminToken: 200} {
		req, _ := http.NewRequest("GET", w.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: %d, want %d", token, resp.StatusCode, want)
		}
	}
}
