package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

func hitlFixture(t *testing.T) *lf {
	t.Helper()
	f := newFixture(t)
	text := fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 300
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants]]
id = "ask"
server = "demo"
tool = "ask"
[grants.approval]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`, financeLead.Public())
	p, err := policy.Parse([]byte(text), "hitl.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.agent = agentK
	f.capRaw, f.cap, _ = f.k.IssueCapability(agentK.Public(), []string{"confirm", "ask"}, time.Hour)
	return &lf{fixture: f, policyText: text}
}

func TestConfirmApprovedAndDenied(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	for _, decision := range []string{"approved", "denied"} {
		out, err := f.k.Submit(ctx, f.call(t, "confirm", `{"prompt":"Send the quarterly report to 4,000 customers?","details":{"list":"all"}}`, ""))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Fatalf("%+v %v", out, err)
		}
		req, _ := f.k.Approval(out.ApprovalRequestID)
		if req.Kind != approval.KindConfirm || req.Summary != "Send the quarterly report to 4,000 customers?" || len(req.Arguments) == 0 {
			t.Fatalf("request %+v", req)
		}
		if _, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, decision, nil), "", ""); err != nil {
			t.Fatal(err)
		}
		rec, _ := f.k.Call(out.RequestID)
		if decision == "approved" {
			var o map[string]any
			json.Unmarshal(rec.Output, &o)
			if rec.Status != kernel.StatusAllowed || o["confirmed"] != true {
				t.Fatalf("confirm output %+v", rec)
			}
		} else if rec.Status != kernel.StatusDenied || rec.Guard != kernel.GuardHumanApproval {
			t.Fatalf("confirm denied %+v", rec)
		}
		if f.disp.count(out.RequestID) != 0 {
			t.Fatal("a confirm was dispatched to a tool")
		}
	}
}

func TestAskValidatesAndReturnsAnswers(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	questions := `{"prompt":"Which region?","questions":[
		{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]},
		{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true},
		{"id":"why","text":"Anything else?","type":"text"}]}`
	out, err := f.k.Submit(ctx, f.call(t, "ask", questions, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	req, _ := f.k.Approval(out.ApprovalRequestID)
	if req.Kind != approval.KindQuestion || len(req.Questions) == 0 {
		t.Fatalf("%+v", req)
	}
	bad := []string{
		`{"region":"asia","checks":["unit"],"why":"x"}`, // not an option
		`{"region":"eu","checks":["unit"]}`,             // unanswered
		`{"region":"eu","checks":"unit","why":"x"}`,     // multi needs a list
	}
	for _, a := range bad {
		tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(a) })
		if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrMalformedToken) {
			t.Fatalf("answers %s: %v", a, err)
		}
	}
	good := `{"region":"eu","checks":["unit","load test"],"why":"ship it"}`
	if _, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved",
		func(tk *approval.Token) { tk.Answers = json.RawMessage(good) }), "", ""); err != nil {
		t.Fatal(err)
	}
	rec, _ := f.k.Call(out.RequestID)
	var o struct {
		Answers map[string]any `json:"answers"`
	}
	json.Unmarshal(rec.Output, &o)
	if rec.Status != kernel.StatusAllowed || o.Answers["region"] != "eu" {
		t.Fatalf("%s", rec.Output)
	}
}

func TestHITLBadArgumentsAndTimeout(t *testing.T) {
	f := hitlFixture(t)
	if _, err := f.k.Submit(context.Background(), f.call(t, "confirm", `{"prompt":""}`, "")); !errors.Is(err, kernel.ErrBadCall) {
		t.Fatalf("empty prompt: %v", err)
	}
	if _, err := f.k.Submit(context.Background(), f.call(t, "ask", `{"questions":[{"id":"a","text":"?","type":"single"}]}`, "")); !errors.Is(err, kernel.ErrBadCall) {
		t.Fatalf("select without options: %v", err)
	}
	out, _ := f.k.Submit(context.Background(), f.call(t, "confirm", `{"prompt":"ok?"}`, ""))
	f.clock.Advance(300 * time.Second)
	eventually(t, "timeout", func() bool { rec, _ := f.k.Call(out.RequestID); return rec.Status == kernel.StatusDenied })
	rec, _ := f.k.Call(out.RequestID)
	if rec.Guard != kernel.GuardApprovalTimeout {
		t.Fatalf("%+v", rec)
	}
}
