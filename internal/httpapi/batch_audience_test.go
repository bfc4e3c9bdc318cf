package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// deployment is one chiod (kernel, bbolt store, HTTP API) trusting Alice
// and Bob as approvers (approvalsPolicy), with its own kernel key.
func deployment(t *testing.T, kernelSeed string, c *clock.Fake) *approvalsFixture {
	t.Helper()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public()),
		KernelKey: testkit.Key(keys.FromSeed([]byte(kernelSeed))), Clock: c, Dispatcher: &argsDispatcher{},
		Serve: true, AdminToken: approvalsAdmin, ReadToken: approvalsReader})
	return &approvalsFixture{k: w.Kernel, clock: c, srv: w.Srv, api: w.API, w: w}
}

// A standing approval Alice signed for staging is refused by production,
// which trusts the same approver key but is another kernel: whoever can
// read staging's batches (GET /approvals/batch hands out the raw token)
// must not be able to create a standing approval at production with it.
func TestBatchTokenForOneKernelIsRefusedByAnother(t *testing.T) {
	c := clock.NewFake(time.Unix(1_800_000_000, 0))
	staging := deployment(t, "staging-staging-staging-staging-", c)
	production := deployment(t, "production-production-production", c)

	b := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: keyAlice.Public().String(),
		ServerPattern: "pay", ToolPattern: "refund", NotBefore: c.Now().Unix(), NotAfter: c.Now().Add(time.Hour).Unix()}
	raw, err := b.Sign(keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	if status, m := staging.do(t, "POST", "/approvals/batch", `{"token":`+string(raw)+`}`, nil); status != 201 {
		t.Fatalf("staging refused its own batch: %d %v", status, m)
	}

	// A staging reader copies the token as staging serves it.
	copied := listedTokens(t, staging)
	if len(copied) != 1 {
		t.Fatalf("staging lists %d batches, want 1", len(copied))
	}

	status, m := production.do(t, "POST", "/approvals/batch", `{"token":`+string(copied[0])+`}`, nil)
	msg, _ := m["message"].(string)
	if status != 403 || m["error"] != "approval_rejected" || !strings.Contains(msg, "audience") {
		t.Errorf("production answered %d %v to staging's batch, want 403 approval_rejected naming the audience", status, m)
	}
	if _, m := production.do(t, "GET", "/approvals/batch", "", withBearer(approvalsReader)); m["count"] != float64(0) {
		t.Errorf("production stores %v standing approvals after the replay, want 0: %v", m["count"], m["batches"])
	}
}

// listedTokens is what a reader of f gets from GET /approvals/batch: each
// standing approval's token, byte for byte as stored.
func listedTokens(t *testing.T, f *approvalsFixture) []json.RawMessage {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/approvals/batch", nil)
	req.Header.Set("Authorization", "Bearer "+approvalsReader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Batches []struct {
			Token json.RawMessage `json:"token"`
		} `json:"batches"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /approvals/batch: %d %v", resp.StatusCode, err)
	}
	var out []json.RawMessage
	for _, b := range list.Batches {
		out = append(out, b.Token)
	}
	return out
}
