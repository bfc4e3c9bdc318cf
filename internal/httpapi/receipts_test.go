package httpapi_test

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

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

const auditPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "echo"
[[servers.tools]]
name = "refund"
action = "charge"

[[grants]]
id = "echo"
server = "pay"
tool = "echo"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

var (
	auditKernelKey = keys.FromSeed(bytes.Repeat([]byte{3}, 32))
	auditApprover  = keys.FromSeed(bytes.Repeat([]byte{4}, 32))
	auditAgent     = keys.FromSeed(bytes.Repeat([]byte{5}, 32))
)

type echoDispatcher struct{}

func (echoDispatcher) Dispatch(_ context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{Output: r.Arguments}, nil
}

type auditFixture struct {
	k     *kernel.Kernel
	log   *receipt.Log
	clock *clock.Fake
	srv   *httptest.Server
	w     *testkit.World
}

func newAuditFixture(t *testing.T) *auditFixture {
	t.Helper()
	f := &auditFixture{clock: clock.NewFake(time.Unix(1_800_000_000, 0))}
	// Checkpoints come only from the routes (a proof of a receipt newer than
	// the latest checkpoint, an export), so the test knows every size.
	f.log = receipt.NewLog(auditKernelKey, receipt.LogOptions{Every: 1 << 40, Interval: time.Hour, Now: f.clock.Now})
	f.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditPolicy, auditApprover.Public()), PolicyName: "audit.toml",
		KernelKey: testkit.Key(auditKernelKey), Agent: testkit.Key(auditAgent), Grants: []string{"echo", "refunds"},
		Clock: f.clock, Dispatcher: echoDispatcher{}, Log: f.log, Server: "pay", Serve: true, AdminToken: "admin", ReadToken: "reader"})
	f.k, f.srv = f.w.Kernel, f.w.Srv
	return f
}

func (f *auditFixture) call(t *testing.T, tool string) *kernel.Outcome {
	t.Helper()
	return f.w.Submit(t, tool, `{"n":1}`, "")
}

// decide answers a pending call as the approver.
func (f *auditFixture) decide(t *testing.T, approvalID, decision string) *kernel.RespondResult {
	t.Helper()
	f.clock.Advance(1500 * time.Millisecond)
	raw := f.w.Token(t, approvalID, auditApprover, decision, nil)
	res, err := f.k.Respond(context.Background(), approvalID, raw, "", kernel.ChannelAPI)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *auditFixture) get(t *testing.T, path, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// populate: 3 allowed calls, a refund approved and one denied by a human.
func (f *auditFixture) populate(t *testing.T) (approved, denied *kernel.RespondResult) {
	for i := 0; i < 3; i++ {
		if out := f.call(t, "echo"); out.Status != kernel.StatusAllowed {
			t.Fatalf("echo: %+v", out)
		}
	}
	p1, p2 := f.call(t, "refund"), f.call(t, "refund")
	if p1.Status != kernel.StatusPendingApproval || p2.Status != kernel.StatusPendingApproval {
		t.Fatalf("refunds: %+v %+v", p1, p2)
	}
	return f.decide(t, p1.ApprovalRequestID, approval.DecisionApproved), f.decide(t, p2.ApprovalRequestID, approval.DecisionDenied)
}

func TestInclusionProofOverHTTPVerifies(t *testing.T) {
	f := newAuditFixture(t)
	for i := 0; i < 3; i++ {
		f.call(t, "echo")
	}
	// A proof of seq 3 signs a checkpoint at size 3 first.
	code, body := f.get(t, "/v1/receipts?order=desc&limit=1", "reader")
	var page httpapi.ReceiptPage
	json.Unmarshal(body, &page)
	third, _ := receipt.Parse(page.Receipts[0])
	if code, body := f.get(t, "/v1/receipts/"+third.ID+"/proof", "reader"); code != 200 || !strings.Contains(string(body), `"tree_size":3`) {
		t.Fatalf("proof of seq 3: %d %s", code, body)
	}
	f.populate(t)
	code, body = f.get(t, "/v1/receipts?limit=100", "reader")
	if code != 200 || json.Unmarshal(body, &page) != nil || page.Count != 10 {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, raw := range page.Receipts {
		rc, err := receipt.Verify(raw, auditKernelKey.Public())
		if err != nil {
			t.Fatal(err)
		}
		code, body := f.get(t, "/v1/receipts/"+rc.ID+"/proof", "reader")
		var pr httpapi.ProofResponse
		if code != 200 || json.Unmarshal(body, &pr) != nil {
			t.Fatalf("proof %s: %d %s", rc.ID, code, body)
		}
		if !bytes.Equal(pr.Receipt, raw) {
			t.Fatal("proof carries other bytes than the stored receipt")
		}
		cp, err := receipt.VerifyCheckpoint(pr.Checkpoint, auditKernelKey.Public())
		if err != nil {
			t.Fatal(err)
		}
		root, _ := cp.Root()
		path, err := receipt.ProofFromHex(pr.Proof.Hashes)
		if err != nil {
			t.Fatal(err)
		}
		// The RFC 6962 verifier, with nothing but the receipt bytes, the
		// leaf position (seq-1) and the signed tree head.
		if cp.TreeSize < rc.Seq || pr.Proof.TreeSize != cp.TreeSize || pr.Proof.LeafIndex != rc.Seq-1 {
			t.Fatalf("proof shape: %+v for seq %d, checkpoint %d", pr.Proof, rc.Seq, cp.TreeSize)
		}
		if err := receipt.VerifyInclusion(receipt.LeafHash(raw), rc.Seq-1, cp.TreeSize, path, root); err != nil {
			t.Fatalf("seq %d: %v", rc.Seq, err)
		}
		// The same proof does not verify another receipt.
		if rc.Seq > 1 {
			if err := receipt.VerifyInclusion(receipt.LeafHash(page.Receipts[0]), rc.Seq-1, cp.TreeSize, path, root); err == nil {
				t.Fatal("proof verified the wrong receipt")
			}
		}
	}
	// The latest checkpoint covers everything; an older one is stored and
	// provably a prefix of it.
	code, latest := f.get(t, "/v1/checkpoints/latest", "reader")
	cpNew, err := receipt.VerifyCheckpoint(latest, auditKernelKey.Public())
	if code != 200 || err != nil || cpNew.TreeSize != 10 {
		t.Fatalf("latest: %d %v %s", code, err, latest)
	}
	code, old := f.get(t, "/v1/checkpoints?size=3", "reader")
	cpOld, err := receipt.VerifyCheckpoint(old, auditKernelKey.Public())
	if code != 200 || err != nil {
		t.Fatalf("checkpoint at 3: %d %v %s", code, err, old)
	}
	code, body = f.get(t, "/v1/checkpoints/consistency?from=3&to=10", "reader")
	var cons receipt.ConsistencyProof
	if code != 200 || json.Unmarshal(body, &cons) != nil {
		t.Fatalf("consistency: %d %s", code, body)
	}
	rOld, _ := cpOld.Root()
	rNew, _ := cpNew.Root()
	if err := cons.Verify(rOld, rNew); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/v1/checkpoints?size=5": 404, "/v1/checkpoints": 400,
		"/v1/checkpoints/consistency?from=4&to=99": 404, "/v1/checkpoints/consistency?from=5&to=4": 400,
		"/v1/checkpoints/consistency?from=x&to=4": 400,
		"/v1/receipts/rc-nope/proof":              404} {
		if code, body := f.get(t, path, "reader"); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
}

func TestAuditRoutesNeedABearer(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t)
	for _, path := range []string{"/v1/receipts", "/v1/receipts/stats", "/v1/receipts/rc-x", "/v1/receipts/rc-x/proof",
		"/v1/checkpoints/latest", "/v1/checkpoints?size=1", "/v1/checkpoints/consistency?from=1&to=2", "/v1/export"} {
		for _, tok := range []string{"", "wrong"} {
			if code, body := f.get(t, path, tok); code != 401 || !strings.Contains(string(body), "unauthorized") {
				t.Errorf("%s with %q: %d %s", path, tok, code, body)
			}
		}
	}
}

func TestListStatsAndExportOverHTTP(t *testing.T) {
	f := newAuditFixture(t)
	approved, denied := f.populate(t)

	// Newest first, paged by seq.
	var seqs []uint64
	cursor := ""
	for {
		code, body := f.get(t, "/v1/receipts?order=desc&limit=3"+cursor, "reader")
		var page httpapi.ReceiptPage
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("%d %s", code, body)
		}
		for _, raw := range page.Receipts {
			rc, _ := receipt.Parse(raw)
			seqs = append(seqs, rc.Seq)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + page.NextCursor
	}
	if fmt.Sprint(seqs) != "[7 6 5 4 3 2 1]" {
		t.Fatalf("desc pages: %v", seqs)
	}
	// The seed's audit queries.
	for q, want := range map[string][]string{
		"decision=deny&guard=human-approval":                     {denied.ReceiptID},
		"decision=allow&meta=approver":                           {approved.ReceiptID},
		"decision=incomplete&meta=approval_request_id&since=24h": nil, // filled below
	} {
		code, body := f.get(t, "/v1/receipts?"+q, "reader")
		var page httpapi.ReceiptPage
		json.Unmarshal(body, &page)
		if code != 200 || want != nil && (page.Count != 1 || !bytes.Contains(page.Receipts[0], []byte(want[0]))) {
			t.Errorf("%s: %d %s", q, code, body)
		}
		if want == nil && page.Count != 2 {
			t.Errorf("%s: %d receipts", q, page.Count)
		}
	}
	code, body := f.get(t, "/v1/receipts/stats?decision=allow&meta=approver&group_by=metadata.approver_display_name", "reader")
	var st receipt.StatsResult
	if code != 200 || json.Unmarshal(body, &st) != nil || st.Total != 1 || len(st.Groups) != 1 ||
		st.Groups[0].Key != "Finance Lead" || st.Groups[0].LatencyMs == nil || st.Groups[0].LatencyMs.P50 != 1500 {
		t.Fatalf("stats: %d %s", code, body)
	}
	code, body = f.get(t, "/v1/receipts/stats?group_by=decision", "reader")
	if code != 200 || !strings.Contains(string(body), `"total":7`) || !strings.Contains(string(body), `{"key":"allow","count":4`) {
		t.Fatalf("stats by decision: %d %s", code, body)
	}
	if code, _ := f.get(t, "/v1/receipts/stats?group_by=seq", "reader"); code != 400 {
		t.Fatalf("bad group_by: %d", code)
	}
	if code, _ := f.get(t, "/v1/receipts?order=sideways", "reader"); code != 400 {
		t.Fatalf("bad order: %d", code)
	}

	// The export verifies offline, approval tokens included.
	code, body = f.get(t, "/v1/export", "reader")
	if code != 200 {
		t.Fatalf("export: %d %s", code, body)
	}
	rep, err := receipt.VerifyExport(bytes.NewReader(body), receipt.VerifyOptions{KernelKey: auditKernelKey.Public()})
	if err != nil || !rep.OK() {
		t.Fatalf("verify export: %v %+v", err, rep.Problems)
	}
	if rep.Receipts != 7 || rep.Chains != 2 || rep.Tokens != 2 || rep.Latest.TreeSize != 7 || rep.Uncovered != 0 {
		t.Fatalf("report %+v", rep)
	}
}

// plainStore hides the store's indexes and Merkle log: the routes fall back
// to a full scan, and checkpoint routes say there is no log.
type plainStore struct{ kernel.Store }

func TestReceiptRoutesWithoutIndexes(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t)
	api, err := httpapi.New(httpapi.Config{Kernel: f.k, Store: plainStore{f.k.Store()}, AdminToken: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	f.srv = srv
	var seqs []uint64
	for cursor := ""; ; {
		code, body := f.get(t, "/v1/receipts?order=desc&limit=2&decision=allow"+cursor, "admin")
		var page httpapi.ReceiptPage
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("%d %s", code, body)
		}
		for _, raw := range page.Receipts {
			rc, _ := receipt.Parse(raw)
			seqs = append(seqs, rc.Seq)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + page.NextCursor
	}
	if fmt.Sprint(seqs) != "[6 3 2 1]" {
		t.Fatalf("allow, newest first: %v", seqs)
	}
	code, body := f.get(t, "/v1/receipts/stats?group_by=guard", "admin")
	if code != 200 || !strings.Contains(string(body), `{"key":"human-approval","count":1`) {
		t.Fatalf("stats: %d %s", code, body)
	}
	for _, path := range []string{"/v1/checkpoints/latest", "/v1/receipts/rc-x/proof", "/v1/export"} {
		if code, body := f.get(t, path, "admin"); code != 503 || !strings.Contains(string(body), "unavailable") {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
}
