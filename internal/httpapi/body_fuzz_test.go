package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// fuzzRoutes are the POST routes whose body an agent or an approver
// writes, with the bearer each is sent with ("" = none).
var fuzzRoutes = []struct{ path, bearer string }{
	{"/v1/calls", ""},
	{"/approvals/%s/respond", ""},
	{"/approvals/batch/respond", approvalsAdmin},
	{"/approvals/batch", ""},
	{"/approvals/%s/cancel", approvalsAdmin},
	{"/v1/session", ""},
	{"/v1/capabilities", approvalsAdmin},
}

// FuzzAPIBodies posts fuzzed bodies to chiod's API (the whole handler,
// over a kernel with a real store and a parked approval request). Seeds
// are bodies the real clients build: a signed call, a signed token, a
// batch. Whatever the body: the answer is never a 5xx (nothing the client
// sends is the server's fault), it is JSON, and a body that is not strict
// JSON (canon.Check) is never taken (no 2xx).
func FuzzAPIBodies(f *testing.F) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	w := testkit.NewWorld(f, testkit.Options{PolicyTOML: fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public()),
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Clock: clk, Dispatcher: &argsDispatcher{},
		Serve: true, AdminToken: approvalsAdmin, ReadToken: approvalsReader})
	capRaw, _, err := w.Kernel.IssueCapability(keyAgent.Public(), []string{"echo", "refunds", "deploys"}, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	refund := func(args string) *kernel.ToolCall {
		return w.CallAs(f, keyAgent, capRaw, "pay", "refund", args, `{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`)
	}
	parked := w.SubmitCall(f, refund(`{"amount":450,"currency":"USD"}`))
	if parked.Status != kernel.StatusPendingApproval {
		f.Fatalf("want a parked call, got %+v", parked)
	}
	id := parked.ApprovalRequestID
	call, _ := json.Marshal(refund(`{"amount":450,"currency":"USD"}`))
	echo, _ := json.Marshal(w.CallAs(f, keyAgent, capRaw, "pay", "echo", `{"msg":"hi"}`, ""))
	tok := w.Token(f, id, keyAlice, approval.DecisionDenied, nil)
	batch, err := (&approval.BatchToken{Schema: approval.BatchSchema, ID: "bt-1", Approver: keyAlice.Public().String(),
		Audience: w.Kernel.PublicKey().String(), ServerPattern: "pay", ToolPattern: "echo",
		NotBefore: clk.Now().Unix(), NotAfter: clk.Now().Add(time.Hour).Unix()}).Sign(keyAlice)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct {
		route uint8
		body  []byte
	}{
		{0, call}, {0, echo}, {0, []byte(`{"request_id":7}`)}, {0, []byte(`[]`)},
		{1, []byte(`{"token":` + string(tok) + `}`)}, {1, []byte(`{"token":` + string(tok) + `,"outcome":"denied","reason":"no"}`)},
		{2, []byte(`{"items":[{"approval_id":"` + id + `","token":` + string(tok) + `}]}`)},
		{3, []byte(`{"token":` + string(batch) + `}`)}, {3, batch},
		{4, []byte(`{"reason":"x"}`)},
		{5, []byte(`{"public_key":"` + keyAlice.Public().String() + `"}`)},
		{6, []byte(`{"subject":"` + keyOther.Public().String() + `","grants":["echo"],"ttl_seconds":60}`)},
	} {
		f.Add(s.route, s.body)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := rt.path
		if bytes.Contains([]byte(path), []byte("%s")) {
			path = fmt.Sprintf(path, id)
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if rt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+rt.bearer)
		}
		rec := httptest.NewRecorder()
		w.API.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %s %q: %d, answer is not JSON: %q", path, body, rec.Code, rec.Body)
		}
		if canon.Check(body) != nil && rec.Code < 300 {
			t.Fatalf("POST %s %q: %d, took a body that is not strict JSON: %s", path, body, rec.Code, rec.Body)
		}
	})
}
