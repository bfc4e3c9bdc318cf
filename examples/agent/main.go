// Command agent is a small agent that issues a $450 refund through the chio
// SDK and waits for a human to approve it.
//
//	chiod -config examples/policies/quickstart.toml
//	go run ./examples/agent -key agent.pem -capability agent.cap
//
// The capability must hold the quickstart's "refunds" grant (see
// docs/agent-developer.md). Flags default to CHIO_URL, CHIO_KEY and
// CHIO_CAPABILITY.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	chio "github.com/chiokernel/chio/sdk"
)

func main() {
	url := flag.String("url", envOr("CHIO_URL", chio.DefaultURL), "chiod URL")
	key := flag.String("key", os.Getenv("CHIO_KEY"), "agent private key file")
	capFile := flag.String("capability", os.Getenv("CHIO_CAPABILITY"), "capability file")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for the approver")
	flag.Parse()

	client, err := chio.NewClient(*url, chio.WithKeyFile(*key), chio.WithCapabilityFile(*capFile))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := client.CallTool(ctx, chio.Call{
		Server:    "demo",
		Tool:      "issue_refund",
		Arguments: map[string]any{"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
		Intent: &chio.Intent{Purpose: "Customer requested refund for order #8834",
			MaxAmount: &chio.Amount{Units: 450, Currency: "USD"}},
	})
	if err != nil {
		log.Fatal(err) // transport or bad input; a denial is not an error
	}
	switch r := res.(type) {
	case *chio.Allowed:
		fmt.Println(refund(r.Execution, r.ToolError, r.Output, r.AmendedArguments))
		return
	case *chio.Denied:
		fmt.Printf("denied by %s: %s\n", r.Guard, r.Reason)
		return
	case *chio.PendingApproval:
		fmt.Printf("waiting for a human: %s (decide by %s)\n", r.Summary, r.Deadline.Format(time.RFC3339))
		fmt.Printf("approve with (CHIO_READ_TOKEN or CHIO_ADMIN_TOKEN set):\n  chio approval approve %s --key examples/keys/finance-lead.pem --note ok\n", r.ApprovalID)
		// This process could exit here and another resume later with
		// client.Await(ctx, r.ApprovalID): the pause is kept by chiod.
		ctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		done, err := client.Await(ctx, r.ApprovalID)
		if err != nil {
			log.Fatal(err) // errors.Is(err, chio.ErrTimedOut): still pending
		}
		if done.Status != chio.StatusAllowed {
			fmt.Printf("%s by %s: %s\n", done.Status, done.Guard, done.Reason)
			return
		}
		fmt.Printf("approved by %s (%q): %s\n", done.ApproverName, done.Note, refund(done.Execution, done.ToolError, done.Output, done.AmendedArguments))
	}
}

// refund says what became of an allowed refund: issued (with the
// approver's arguments, when a human amended it), failed, never delivered,
// or unknown — it may have run, so it is never sent again under a new id.
func refund(execution, toolError string, output, amended json.RawMessage) string {
	switch {
	case execution == "unknown":
		return "the refund may have run (outcome unknown; check before retrying, never under a new request id): " + toolError
	case toolError != "" || execution != "" && execution != "succeeded": // as Allowed.Failed
		return fmt.Sprintf("the refund failed (%s): %s", execution, toolError)
	case amended != nil:
		return fmt.Sprintf("refund issued with the approver's amended arguments %s: %s", amended, output)
	}
	return fmt.Sprintf("refund issued: %s", output)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
