package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chio approval cancel posts {"reason"} to /approvals/{id}/cancel with the
// admin token and prints what chiod answered.
func TestApprovalCancel(t *testing.T) {
	type seen struct {
		method, path, auth, ctype string
		body                      map[string]any
	}
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seen{method: r.Method, path: r.URL.EscapedPath(), auth: r.Header.Get("Authorization"), ctype: r.Header.Get("Content-Type")}
		json.Unmarshal(b, &s.body)
		got = append(got, s)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer admin-token-0123456789abcdef0123":
			w.WriteHeader(401)
			w.Write([]byte(`{"error":"unauthorized","message":"the admin token is required"}`))
		case strings.Contains(r.URL.Path, "ar-gone"):
			w.WriteHeader(404)
			w.Write([]byte(`{"error":"not_found","message":"approval request ar-gone not found"}`))
		case strings.Contains(r.URL.Path, "ar-done"):
			w.WriteHeader(409)
			w.Write([]byte(`{"error":"conflict","message":"approval request ar-done is approved, not pending"}`))
		default:
			w.Write([]byte(`{"approval_id":"ar-1","outcome":"cancelled","resolved_at":1700000000,"receipt_id":"rc-9"}`))
		}
	}))
	defer srv.Close()
	env := map[string]string{"CHIO_URL": srv.URL, "CHIO_ADMIN_TOKEN": "admin-token-0123456789abcdef0123"}

	so, se, code := chio(env, "approval", "cancel", "ar-1", "--reason", "order was withdrawn")
	if code != cli.ExitOK || strings.TrimSpace(so) != "cancelled ar-1: order was withdrawn (receipt rc-9)" || se != "" {
		t.Fatalf("cancel: %d %q %q", code, so, se)
	}
	last := got[len(got)-1]
	if last.method != "POST" || last.path != "/approvals/ar-1/cancel" || last.auth != "Bearer "+env["CHIO_ADMIN_TOKEN"] ||
		last.ctype != "application/json" || len(last.body) != 1 || last.body["reason"] != "order was withdrawn" {
		t.Fatalf("request: %+v", last)
	}
	so, _, code = chio(env, "--output", "json", "approval", "cancel", "ar-1", "--reason", "x")
	var v map[string]any
	if code != cli.ExitOK || json.Unmarshal([]byte(so), &v) != nil || v["outcome"] != "cancelled" {
		t.Fatalf("json: %d %s", code, so)
	}
	// The id is escaped into the path, never interpreted.
	chio(env, "approval", "cancel", "ar-1/../x", "--reason", "x")
	if p := got[len(got)-1].path; p != "/approvals/ar-1%2F..%2Fx/cancel" {
		t.Fatalf("escaped path: %s", p)
	}

	n := len(got)
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		code int
		err  string
	}{
		"no reason":    {env, []string{"approval", "cancel", "ar-1"}, cli.ExitUsage, "--reason is required"},
		"blank reason": {env, []string{"approval", "cancel", "ar-1", "--reason", "  "}, cli.ExitUsage, "--reason is required"},
		"long reason":  {env, []string{"approval", "cancel", "ar-1", "--reason", strings.Repeat("x", 5000)}, cli.ExitUsage, "longer than"},
		"no id":        {env, []string{"approval", "cancel", "--reason", "x"}, cli.ExitUsage, "missing ID"},
	} {
		t.Run(name, func(t *testing.T) {
			_, se, code := chio(c.env, c.args...)
			if code != c.code || !strings.Contains(se, c.err) {
				t.Fatalf("exit %d, stderr %s", code, se)
			}
		})
	}
	if len(got) != n {
		t.Fatalf("a usage mistake reached the server: %+v", got[n:])
	}
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		err  string
	}{
		"unknown id":     {env, []string{"approval", "cancel", "ar-gone", "--reason", "x"}, "not_found (404): approval request ar-gone not found"},
		"resolved":       {env, []string{"approval", "cancel", "ar-done", "--reason", "x"}, "conflict (409)"},
		"no admin token": {map[string]string{"CHIO_URL": srv.URL}, []string{"approval", "cancel", "ar-1", "--reason", "x"}, "unauthorized (401)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, se, code := chio(c.env, c.args...)
			if code != cli.ExitError || !strings.Contains(se, c.err) {
				t.Fatalf("exit %d, stderr %s", code, se)
			}
		})
	}
}
