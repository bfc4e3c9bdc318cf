package chio_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/chiokernel/chio/approval"
	chio "github.com/chiokernel/chio/sdk"
)

// refund is the quickstart's $450 refund: above the 200 threshold, so a
// human must approve it.
func refund() chio.Call {
	return chio.Call{
		Server:    "demo",
		Tool:      "issue_refund",
		Arguments: map[string]any{"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
		Intent: &chio.Intent{Purpose: "Customer requested refund for order #8834",
			MaxAmount: &chio.Amount{Units: 450, Currency: "USD"}},
	}
}

// An agent calls a tool that needs a human, then resumes with the token
// the approver signed (here in the same program; normally it arrives from
// a channel or a workflow engine).
func Example() {
	ctx := context.Background()
	client, err := chio.FromEnv() // CHIO_URL, CHIO_KEY, CHIO_CAPABILITY
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.CallTool(ctx, refund())
	if err != nil {
		log.Fatal(err)
	}
	pending, ok := res.(*chio.PendingApproval)
	if !ok {
		log.Fatalf("expected a pending approval, got %T", res)
	}
	fmt.Println("pending:", pending.Summary != "", !pending.Deadline.IsZero())

	// The approver's side: read the request, sign a decision.
	req, err := client.Approval(ctx, pending.ApprovalID)
	if err != nil {
		log.Fatal(err)
	}
	lead, err := chio.LoadKey("examples/keys/finance-lead.pem")
	if err != nil {
		log.Fatal(err)
	}
	token, err := chio.SignApproval(req, lead, chio.WithNote("customer verified"))
	if err != nil {
		log.Fatal(err)
	}

	done, err := client.ResumeWithApproval(ctx, pending.ApprovalID, token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Status, "by", done.ApproverName+":", done.Note)
	// Output:
	// pending: true true
	// allowed by Finance Lead: customer verified
}

// The three outcomes of a call are three types; a denial is not an error.
func ExampleClient_CallTool() {
	ctx := context.Background()
	client, err := chio.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	calls := []chio.Call{
		{Server: "demo", Tool: "echo", Arguments: map[string]string{"hello": "world"}},
		{Server: "demo", Tool: "delete_file", Arguments: map[string]string{"path": "/etc/passwd"}},
		refund(),
	}
	for _, call := range calls {
		res, err := client.CallTool(ctx, call)
		if err != nil {
			log.Fatal(err) // transport or bad input
		}
		switch r := res.(type) {
		case *chio.Allowed:
			fmt.Printf("%s: allowed %s\n", call.Tool, r.Output)
		case *chio.Denied:
			fmt.Printf("%s: denied by %s\n", call.Tool, r.Guard)
		case *chio.PendingApproval:
			fmt.Printf("%s: waiting for a human (%s)\n", call.Tool, r.Summary)
		}
	}
	// Output:
	// echo: allowed {"echo":{"hello":"world"}}
	// delete_file: denied by forbidden_paths
	// issue_refund: waiting for a human (Agent wants to charge issue_refund on demo for 450 USD: Customer requested refund for order #8834)
}

// A pause outlives the agent: one process calls and exits, another (with
// the same key) awaits the approval id later and gets the human's note and
// amendment with the output.
func ExampleClient_Await() {
	ctx := context.Background()
	first, _ := chio.FromEnv()
	res, err := first.CallTool(ctx, refund())
	if err != nil {
		log.Fatal(err)
	}
	approvalID := res.(*chio.PendingApproval).ApprovalID // persist this; exit

	go approve(approvalID, chio.WithNote("partial refund"),
		chio.WithAmendment(map[string]any{"customer_id": "cust-9012", "amount": 300, "currency": "USD"}))

	later, _ := chio.FromEnv() // a new process, the same key
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := later.Await(ctx, approvalID)
	if err != nil {
		log.Fatal(err) // errors.Is(err, chio.ErrTimedOut) when ctx ran out
	}
	fmt.Println(done.Status, done.Note, string(done.AmendedArguments))
	// Output:
	// allowed partial refund {"amount":300,"currency":"USD","customer_id":"cust-9012"}
}

// Confirm stops the run for a yes/no from a human.
func ExampleClient_Confirm() {
	client, _ := chio.FromEnv()
	go answerNext(approval.KindConfirm)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ok, err := client.Confirm(ctx, "Delete 3 stale branches?", map[string]any{"branches": []string{"a", "b", "c"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("confirmed:", ok)
	// Output: confirmed: true
}

// Ask puts a small form to a human: free text, single and multiple
// choice, with an "other" the human may type.
func ExampleClient_Ask() {
	client, _ := chio.FromEnv()
	go answerNext(approval.KindQuestion, chio.WithAnswers(chio.Answers{
		"region":   {"eu-west-3"}, // not an option: allowed by AllowOther
		"features": {"auth", "payments"},
		"why":      {"launch in France"},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answers, err := client.Ask(ctx, "Set up the new tenant", []chio.Question{
		{ID: "region", Text: "Which region?", Type: chio.QuestionSingle, Options: []string{"us-east-1", "eu-west-1"}, AllowOther: true},
		{ID: "features", Text: "Enable:", Type: chio.QuestionMulti, Options: []string{"auth", "payments", "search"}},
		{ID: "why", Text: "Why now?", Type: chio.QuestionText},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answers["region"], answers["features"], answers["why"])
	// Output: [eu-west-3] [auth payments] [launch in France]
}

// approve plays the Finance Lead on approval id, as a channel would.
func approve(id string, opts ...chio.TokenOption) {
	ctx := context.Background()
	approver, _ := chio.FromEnv(chio.WithBearer(os.Getenv("CHIO_READ_TOKEN")))
	req, err := approver.Approval(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	lead, _ := chio.LoadKey("examples/keys/finance-lead.pem")
	token, err := chio.SignApproval(req, lead, opts...)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := approver.Respond(ctx, id, token); err != nil {
		log.Fatal(err)
	}
}

// answerNext waits for the next pending request of kind and approves it.
func answerNext(kind string, opts ...chio.TokenOption) {
	reader, _ := chio.NewClient(os.Getenv("CHIO_URL"), chio.WithBearer(os.Getenv("CHIO_READ_TOKEN")))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := reader.Pending(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		for _, req := range list {
			if req.Kind == kind {
				approve(req.ApprovalID, opts...)
				return
			}
		}
	}
	log.Fatalf("no %s request appeared", kind)
}

// An agent withdraws a call it parked: the call ends cancelled, with a
// signed `cancelled` receipt, and anyone awaiting it learns so.
func ExampleClient_Cancel() {
	ctx := context.Background()
	client, err := chio.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.CallTool(ctx, refund())
	if err != nil {
		log.Fatal(err)
	}
	pending := res.(*chio.PendingApproval)
	if _, err := client.Cancel(ctx, pending.ApprovalID, "customer withdrew the request"); err != nil {
		log.Fatal(err)
	}
	done, err := client.Await(ctx, pending.ApprovalID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Status+":", done.Reason)
	// Output:
	// cancelled: customer withdrew the request
}
