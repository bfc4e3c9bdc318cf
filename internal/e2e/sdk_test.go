package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/receipt"
	chio "github.com/chiokernel/chio/sdk"
)

// The agent SDK against a real chiod: typed outcomes, await across an agent
// (and kernel) restart, await after execution, idempotent retry through a
// dropped connection, confirm/ask answered with signed tokens, timeouts,
// and several checkpoints taken oldest first.

func quickstart() string {
	return filepath.Join(repoRoot(), "examples", "policies", "quickstart.toml")
}

func sdkClient(t *testing.T, d *daemon, a *agent, opts ...chio.Option) *chio.Client {
	t.Helper()
	c, err := chio.NewClient(d.url, append([]chio.Option{chio.WithKey(a.key), chio.WithCapability(a.capRaw)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func refundCall(amount int, requestID string) chio.Call {
	return chio.Call{Server: "demo", Tool: "issue_refund", RequestID: requestID,
		Arguments: map[string]any{"customer_id": "cust-9012", "amount": amount, "currency": "USD"},
		Intent:    &chio.Intent{Purpose: "refund", MaxAmount: &chio.Amount{Units: int64(amount), Currency: "USD"}}}
}

func financeLead(t *testing.T) chio.PrivateKey {
	t.Helper()
	k, err := chio.LoadKey(filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// approverClient reads any approval with the admin bearer; it has no agent key.
func approverClient(t *testing.T, d *daemon) *chio.Client {
	c, err := chio.NewClient(d.url, chio.WithBearer(d.token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decide signs (approve or deny) approval id as the Finance Lead and presents it.
func decide(t *testing.T, d *daemon, id string, sign func(*approval.Request) ([]byte, error)) {
	t.Helper()
	ctx := context.Background()
	ap := approverClient(t, d)
	req, err := ap.Approval(ctx, id)
	if err != nil {
		t.Error(err)
		return
	}
	tok, err := sign(req)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := ap.Respond(ctx, id, tok); err != nil {
		t.Error(err)
	}
}

// decideNext waits for the next pending request of kind and decides it.
func decideNext(t *testing.T, d *daemon, kind string, sign func(*approval.Request) ([]byte, error)) {
	t.Helper()
	ap := approverClient(t, d)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		list, err := ap.Pending(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		for _, r := range list {
			if r.Kind == kind {
				decide(t, d, r.ApprovalID, sign)
				return
			}
		}
	}
	t.Errorf("no pending %s request", kind)
}

// ledgerCount counts issue_refund ledger lines for requestID.
func ledgerCount(t *testing.T, d *daemon, requestID string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.dataDir, "builtin", "ledger.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(line, &e) == nil && e.RequestID == requestID {
			n++
		}
	}
	return n
}

// verdicts counts the receipts of requestID by verdict.
func verdicts(t *testing.T, d *daemon, requestID string) map[string]int {
	t.Helper()
	out, errOut, code := d.chio(t, t.TempDir(), "receipt", "list", "--limit", "1000", "--output", "jsonl")
	if code != 0 {
		t.Fatalf("receipt list: %d %s", code, errOut)
	}
	m := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		var r receipt.Receipt
		if json.Unmarshal([]byte(line), &r) == nil && r.RequestID == requestID {
			m[r.Decision.Verdict]++
		}
	}
	return m
}

func TestSDKTypedOutcomes(t *testing.T) {
	d := startDaemon(t, quickstart(), filepath.Join(t.TempDir(), "data"))
	a := newAgent(t, d, "echo", "refunds", "files")
	c := sdkClient(t, d, a)
	ctx := context.Background()

	res, err := c.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo", Arguments: map[string]string{"hello": "world"}})
	if al, ok := res.(*chio.Allowed); err != nil || !ok || string(al.Output) != `{"echo":{"hello":"world"}}` || !strings.HasPrefix(al.ReceiptID, "rc-") {
		t.Fatalf("allowed: %#v %v", res, err)
	}
	res, err = c.CallTool(ctx, chio.Call{Server: "demo", Tool: "delete_file", Arguments: map[string]string{"path": "/etc/passwd"}})
	if dn, ok := res.(*chio.Denied); err != nil || !ok || dn.Guard != "forbidden_paths" || dn.Reason == "" || dn.ReceiptID == "" {
		t.Fatalf("denied: %#v %v", res, err)
	}
	res, err = c.CallTool(ctx, refundCall(450, ""))
	p, ok := res.(*chio.PendingApproval)
	if err != nil || !ok || !strings.HasPrefix(p.ApprovalID, "ar-") || p.Summary == "" ||
		time.Until(p.Deadline) < 50*time.Minute || p.ReceiptID == "" {
		t.Fatalf("pending: %#v %v", res, err)
	}
	if st, err := c.Status(ctx, p.ApprovalID); err != nil || st.(*chio.PendingApproval).RequestID != p.RequestID {
		t.Fatalf("status: %#v %v", st, err)
	}

	// Errors are for bad input and refused credentials, typed.
	if _, err := c.CallTool(ctx, refundCall(451, p.RequestID)); !errors.Is(err, chio.ErrConflict) {
		t.Fatalf("reused request id with other content: %v", err)
	}
	if _, err := c.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo", Arguments: json.RawMessage(`{"a":1,"a":2}`)}); !errors.Is(err, chio.ErrBadRequest) {
		t.Fatalf("duplicate keys: %v", err)
	}
	forged := bytes.Replace(a.capRaw, []byte(`"echo"`), []byte(`"admin"`), 1)
	fc, err := chio.NewClient(d.url, chio.WithKey(a.key), chio.WithCapability(forged))
	if err != nil {
		t.Fatal(err)
	}
	var ae *chio.APIError
	if _, err := fc.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo"}); !errors.Is(err, chio.ErrUnauthorized) || !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("forged capability: %v", err)
	}
	// Another agent cannot read this agent's call.
	other := sdkClient(t, d, newAgent(t, d, "echo"))
	if _, err := other.Status(ctx, p.RequestID); !errors.Is(err, chio.ErrUnauthorized) {
		t.Fatalf("another agent's read: %v", err)
	}
}

// TestSDKAwaitAcrossRestart: the agent that called is gone and chiod
// restarts; a new client with the same key awaits the approval id and gets
// the output, the approver's note and the amendment. Awaiting again
// afterwards returns the stored output at once.
func TestSDKAwaitAcrossRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, quickstart(), dataDir)
	a := newAgent(t, d, "refunds")
	ctx := context.Background()

	first := sdkClient(t, d, a)
	res, err := first.CallTool(ctx, refundCall(450, ""))
	if err != nil {
		t.Fatal(err)
	}
	p := res.(*chio.PendingApproval)
	first = nil // the agent process exits

	d.stop()
	d = startDaemon(t, quickstart(), dataDir)
	later := sdkClient(t, d, a)

	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond) // let Await start waiting
		decide(t, d, p.ApprovalID, func(r *approval.Request) ([]byte, error) {
			return chio.SignApproval(r, financeLead(t), chio.WithNote("partial: see ticket"),
				chio.WithAmendment(map[string]any{"customer_id": "cust-9012", "amount": 300, "currency": "USD"}))
		})
	}()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := later.Await(wctx, p.ApprovalID)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != chio.StatusAllowed || r.ApproverName != "Finance Lead" || r.Note != "partial: see ticket" ||
		!strings.Contains(string(r.AmendedArguments), `"amount":300`) || !strings.Contains(string(r.Output), `"amount":300`) ||
		r.RequestID != p.RequestID || r.ApprovalID != p.ApprovalID {
		t.Fatalf("resolution %+v output %s", r, r.Output)
	}
	if n := ledgerCount(t, d, p.RequestID); n != 1 {
		t.Fatalf("ledger lines %d", n)
	}

	// Await on an executed call: immediate, the stored output, by either id.
	for _, id := range []string{p.ApprovalID, p.RequestID} {
		start := time.Now()
		again, err := sdkClient(t, d, a).Await(ctx, id)
		if err != nil || string(again.Output) != string(r.Output) || again.ReceiptID != r.ReceiptID || time.Since(start) > 2*time.Second {
			t.Fatalf("await %s after execution: %+v %v in %s", id, again, err, time.Since(start))
		}
	}
	if n := ledgerCount(t, d, p.RequestID); n != 1 {
		t.Fatalf("ledger lines after re-await %d", n)
	}
}

// dropFirstResponse passes requests through, but throws away the first
// POST /v1/calls answer after chiod has processed it and reports a reset
// connection instead: the case an idempotent retry exists for.
type dropFirstResponse struct {
	mu      sync.Mutex
	dropped bool
	bodies  []string
}

func (d *dropFirstResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/calls" {
		return http.DefaultTransport.RoundTrip(req)
	}
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	d.mu.Lock()
	d.bodies = append(d.bodies, string(body))
	drop := !d.dropped
	d.dropped = true
	d.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !drop {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body) // chiod has answered: the call was decided
	resp.Body.Close()
	return nil, errors.New("connection reset by peer (simulated)")
}

func TestSDKRetryAfterDroppedConnection(t *testing.T) {
	d := startDaemon(t, quickstart(), filepath.Join(t.TempDir(), "data"))
	a := newAgent(t, d, "refunds")
	ctx := context.Background()

	for _, tc := range []struct {
		name    string
		amount  int
		verdict string
	}{
		{"executed", 50, "allow"},      // below the threshold: the refund runs
		{"pending", 450, "incomplete"}, // parked: one approval request
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &dropFirstResponse{}
			c := sdkClient(t, d, a, chio.WithHTTPClient(&http.Client{Transport: rt}))
			res, err := c.CallTool(ctx, refundCall(tc.amount, ""))
			if err != nil {
				t.Fatal(err)
			}
			if len(rt.bodies) != 2 || rt.bodies[0] != rt.bodies[1] {
				t.Fatalf("want the same body sent twice, got %d", len(rt.bodies))
			}
			var id string
			switch r := res.(type) {
			case *chio.Allowed:
				id = r.RequestID
				if n := ledgerCount(t, d, id); n != 1 {
					t.Fatalf("the refund ran %d times", n)
				}
			case *chio.PendingApproval:
				id = r.RequestID
				// The replayed outcome lacks the deadline; the SDK reads it.
				if r.Deadline.IsZero() || r.ApprovalID == "" {
					t.Fatalf("pending after retry: %+v", r)
				}
				pending, err := approverClient(t, d).Pending(ctx)
				if err != nil || len(pending) != 1 || pending[0].RequestID != id {
					t.Fatalf("pending approvals: %d %v", len(pending), err)
				}
			default:
				t.Fatalf("result %#v", res)
			}
			if v := verdicts(t, d, id); len(v) != 1 || v[tc.verdict] != 1 {
				t.Fatalf("receipts for %s: %v", id, v)
			}
		})
	}
}

func TestSDKConfirmAndAsk(t *testing.T) {
	d := startDaemon(t, quickstart(), filepath.Join(t.TempDir(), "data"))
	a := newAgent(t, d, "confirm", "ask")
	c := sdkClient(t, d, a)
	lead := financeLead(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	approve := func(opts ...chio.TokenOption) func(*approval.Request) ([]byte, error) {
		return func(r *approval.Request) ([]byte, error) { return chio.SignApproval(r, lead, opts...) }
	}
	deny := func(r *approval.Request) ([]byte, error) { return chio.SignDenial(r, lead, "not now") }

	go decideNext(t, d, approval.KindConfirm, approve())
	if ok, err := c.Confirm(ctx, "Deploy to production?", map[string]string{"env": "prod"}, chio.WithRequestID("run-1:deploy")); !ok || err != nil {
		t.Fatalf("approved confirm: %v %v", ok, err)
	}
	if v := verdicts(t, d, "run-1:deploy"); v["incomplete"] != 1 || v["allow"] != 1 {
		t.Fatalf("confirm receipts %v", v)
	}
	// The same checkpoint asked again (a restarted run) is not asked twice.
	if ok, err := c.Confirm(ctx, "Deploy to production?", map[string]string{"env": "prod"}, chio.WithRequestID("run-1:deploy")); !ok || err != nil {
		t.Fatalf("replayed confirm: %v %v", ok, err)
	}

	go decideNext(t, d, approval.KindConfirm, deny)
	if ok, err := c.Confirm(ctx, "Drop the staging database?", nil); ok || err != nil {
		t.Fatalf("denied confirm: %v %v", ok, err)
	}

	questions := []chio.Question{
		{ID: "framework", Text: "Which framework?", Type: chio.QuestionSingle, Options: []string{"react", "vue"}, AllowOther: true},
		{ID: "features", Text: "Enable:", Type: chio.QuestionMulti, Options: []string{"auth", "payments", "search"}},
		{ID: "name", Text: "Project name?", Type: chio.QuestionText},
	}
	want := chio.Answers{"framework": {"svelte"}, "features": {"auth", "payments"}, "name": {"atlas"}}
	go decideNext(t, d, approval.KindQuestion, approve(chio.WithAnswers(want)))
	got, err := c.Ask(ctx, "New project", questions)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(got); string(g) != mustJSON(want) {
		t.Fatalf("answers %s", g)
	}

	go decideNext(t, d, approval.KindQuestion, deny)
	if _, err := c.Ask(ctx, "", questions); !errors.Is(err, chio.ErrDeclined) {
		t.Fatalf("declined ask: %v", err)
	}

	// The approver's SDK refuses answers that do not fit the questions.
	req := &approval.Request{ApprovalID: "ar-x", Kind: approval.KindQuestion, Questions: json.RawMessage(mustJSON(questions))}
	for name, bad := range map[string]chio.Answers{
		"not an option": {"framework": {"react"}, "features": {"ftp"}, "name": {"x"}},
		"two singles":   {"framework": {"react", "vue"}, "features": {"auth"}, "name": {"x"}},
		"missing":       {"framework": {"react"}},
		"unknown id":    {"framework": {"react"}, "features": {"auth"}, "name": {"x"}, "extra": {"y"}},
	} {
		if _, err := chio.SignApproval(req, lead, chio.WithAnswers(bad)); !errors.Is(err, chio.ErrBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSDKTimeouts: the approval's own deadline (2 s in the test policy) and
// the caller's ctx deadline both surface as ErrTimedOut.
func TestSDKTimeouts(t *testing.T) {
	d := startDaemon(t, filepath.Join(repoRoot(), "internal", "e2e", "testdata", "hitl-timeout.toml"), filepath.Join(t.TempDir(), "data"))
	a := newAgent(t, d, "confirm", "ask", "refunds")
	c := sdkClient(t, d, a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start := time.Now()
	ok, err := c.Confirm(ctx, "Anyone there?", nil, chio.WithRequestID("run-2:confirm"))
	if ok || !errors.Is(err, chio.ErrTimedOut) || time.Since(start) > 30*time.Second {
		t.Fatalf("confirm past its deadline: %v %v after %s", ok, err, time.Since(start))
	}
	if v := verdicts(t, d, "run-2:confirm"); v["deny"] != 1 {
		t.Fatalf("timeout receipts %v", v)
	}
	if _, err := c.Ask(ctx, "", []chio.Question{{ID: "q", Text: "Anyone?", Type: chio.QuestionText}}); !errors.Is(err, chio.ErrTimedOut) {
		t.Fatalf("ask past its deadline: %v", err)
	}

	// The caller's deadline: the call stays pending in chiod.
	res, err := c.CallTool(ctx, refundCall(450, ""))
	if err != nil {
		t.Fatal(err)
	}
	p := res.(*chio.PendingApproval)
	short, cancel2 := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel2()
	if _, err := c.Await(short, p.ApprovalID); !errors.Is(err, chio.ErrTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("await past ctx deadline: %v", err)
	}
	if st, err := c.Status(ctx, p.RequestID); err != nil {
		t.Fatal(err)
	} else if _, still := st.(*chio.PendingApproval); !still {
		t.Fatalf("after a client timeout the call is %T", st)
	}
	// A confirm whose ctx runs out first is ErrTimedOut too.
	short, cancel3 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel3()
	if _, err := c.Confirm(short, "Quick?", nil); !errors.Is(err, chio.ErrTimedOut) {
		t.Fatalf("confirm past ctx deadline: %v", err)
	}
}

// TestSDKCheckpointsOldestFirst: a run parks two steps and exits; a new
// process lists them oldest first, resumes each once, and replaying the
// run's steps returns the stored outcomes without running them again.
func TestSDKCheckpointsOldestFirst(t *testing.T) {
	d := startDaemon(t, quickstart(), filepath.Join(t.TempDir(), "data"))
	a := newAgent(t, d, "refunds")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	steps := []chio.Call{refundCall(300, "run-7:step-1"), refundCall(400, "run-7:step-2")}

	run := sdkClient(t, d, a)
	for _, s := range steps {
		if r, err := run.CallTool(ctx, s); err != nil {
			t.Fatal(err)
		} else if _, ok := r.(*chio.PendingApproval); !ok {
			t.Fatalf("%s: %T", s.RequestID, r)
		}
	}
	run = nil

	resumed := sdkClient(t, d, a, chio.WithBearer(d.token))
	pending, err := resumed.Pending(ctx)
	if err != nil || len(pending) != 2 || pending[0].RequestID != "run-7:step-1" || pending[1].RequestID != "run-7:step-2" {
		t.Fatalf("pending %d %v", len(pending), err)
	}
	lead := financeLead(t)
	outputs := map[string]string{}
	for _, req := range pending {
		tok, err := chio.SignApproval(req, lead)
		if err != nil {
			t.Fatal(err)
		}
		r, err := resumed.ResumeWithApproval(ctx, req.ApprovalID, tok)
		if err != nil || r.Status != chio.StatusAllowed {
			t.Fatalf("%s: %+v %v", req.RequestID, r, err)
		}
		outputs[r.RequestID] = string(r.Output)
		// Presenting the same token again is refused by chiod as a replay;
		// resuming with it still reports the call's end.
		if _, err := resumed.Respond(ctx, req.ApprovalID, tok); !errors.Is(err, chio.ErrConflict) {
			t.Fatalf("second presentation: %v", err)
		}
		if again, err := resumed.ResumeWithApproval(ctx, req.ApprovalID, tok); err != nil || string(again.Output) != outputs[r.RequestID] {
			t.Fatalf("resume twice: %+v %v", again, err)
		}
	}
	if left, _ := resumed.Pending(ctx); len(left) != 0 {
		t.Fatalf("%d still pending", len(left))
	}
	// Replaying the run: same ids, same content → the stored outcomes.
	for _, s := range steps {
		r, err := resumed.CallTool(ctx, s)
		al, ok := r.(*chio.Allowed)
		if err != nil || !ok || string(al.Output) != outputs[s.RequestID] {
			t.Fatalf("replay %s: %#v %v", s.RequestID, r, err)
		}
		if n := ledgerCount(t, d, s.RequestID); n != 1 {
			t.Fatalf("%s ran %d times", s.RequestID, n)
		}
	}
}
