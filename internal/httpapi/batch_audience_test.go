package httpapi_test

import (
	"context"
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
	"github.com/chiokernel/chio/kernel"
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

	raw := aliceBatch(t, c, staging.k.PublicKey().String())
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
	if status != 403 || m["error"] != "approval_rejected" || !strings.Contains(msg, "another kernel (audience)") ||
		!strings.Contains(msg, staging.k.PublicKey().String()) || !strings.Contains(msg, production.k.PublicKey().String()) {
		t.Errorf("production answered %d %v to staging's batch, want 403 approval_rejected naming the audience", status, m)
	}
	if n := len(listedTokens(t, production)); n != 0 {
		t.Errorf("production stores %d standing approvals after the replay, want 0", n)
	}
}

// aliceBatch is Alice's one-hour standing approval for pay/refund, for the
// kernel whose key is audience ("": none, as chio before audience made).
func aliceBatch(t *testing.T, c *clock.Fake, audience string) []byte {
	t.Helper()
	b := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: keyAlice.Public().String(),
		Audience: audience, ServerPattern: "pay", ToolPattern: "refund", NotBefore: c.Now().Unix(), NotAfter: c.Now().Add(time.Hour).Unix()}
	raw, err := b.Sign(keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// A new token without an audience (what chio made before it was
// required) is refused with a 400 that says what to send, and nothing is
// stored: it could be replayed at any kernel trusting its approver.
func TestBatchTokenWithoutAudienceIsRefused(t *testing.T) {
	c := clock.NewFake(time.Unix(1_800_000_000, 0))
	f := deployment(t, "production-production-production", c)
	status, m := f.do(t, "POST", "/approvals/batch", `{"token":`+string(aliceBatch(t, c, ""))+`}`, nil)
	msg, _ := m["message"].(string)
	if status != 400 || m["error"] != "bad_request" || !strings.Contains(msg, "audience is required") ||
		!strings.Contains(msg, f.k.PublicKey().String()) {
		t.Errorf("a batch token without audience: %d %v, want 400 bad_request naming this kernel's key", status, m)
	}
	if n := len(listedTokens(t, f)); n != 0 {
		t.Errorf("%d standing approvals stored, want 0", n)
	}
}

// A standing approval stored before audience was required stays as it
// was: it is listed byte for byte and still covers the calls it covered.
func TestBatchStoredWithoutAudienceStillCovers(t *testing.T) {
	c := clock.NewFake(time.Unix(1_800_000_000, 0))
	f := deployment(t, "production-production-production", c)
	raw := aliceBatch(t, c, "")
	var tok approval.BatchToken
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	err := f.w.Store.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutBatch(&approval.Batch{Token: &tok, Raw: raw, CreatedAt: c.Now().UnixMilli()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := listedTokens(t, f); len(got) != 1 || string(got[0]) != string(raw) {
		t.Fatalf("listed %q, want the stored token %q", got, raw)
	}
	capRaw, _, err := f.k.IssueCapability(keyAgent.Public(), []string{"refunds"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := f.w.SubmitCall(t, f.w.CallAs(t, keyAgent, capRaw, "pay", "refund", `{"amount":450,"currency":"USD"}`,
		`{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the stored batch no longer covers a refund: %+v", out)
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
