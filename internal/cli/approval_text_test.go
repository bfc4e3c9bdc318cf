package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// repaintingPurpose is a purpose that, printed raw, returns the cursor and
// repaints the summary "… for 450000 USD: …" as "… for 450 USD: …", then
// moves up, erases the "amount:" line and hides what follows.
const repaintingPurpose = "order 8834\r  Agent wants to charge issue_refund on demo for 450 USD: order 8834\x1b[K" +
	"\x1b[1A\x1b[2K\x1b[8m"

// terminalActive reports a rune a terminal would act on or draw invisibly
// (a bidi override reorders the line) instead of printing it.
func terminalActive(s string) bool {
	return strings.ContainsAny(s, "\x1b\r\x07\x08\u009b\u202e\u200b")
}

// TestRepaintingPurposeRefused: the kernel refuses the purpose (it would be
// printed to approvers' terminals), naming the field; nothing is parked.
func TestRepaintingPurposeRefused(t *testing.T) {
	w := newApprovalWorld(t)
	intent, _ := json.Marshal(map[string]any{"purpose": repaintingPurpose, "max_amount": map[string]any{"units": 450000, "currency": "USD"}})
	out, err := w.k.Submit(context.Background(), w.tw.Call(t, "issue_refund", `{"customer_id":"cust-1","amount":450000,"currency":"USD"}`, string(intent)))
	if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), "governed_intent.purpose") {
		t.Fatalf("got %v %+v, want ErrBadCall naming governed_intent.purpose", err, out)
	}
	so, _, _ := w.run(adminEnv(), "approval", "list")
	if strings.Contains(so, "ar-") {
		t.Fatalf("a refused call was parked:\n%s", so)
	}
}

// TestApprovalViewsEscapeControlAndFormatChars: `chio approval show`,
// `list`, `approve` and `watch` print what a request holds with every
// control and format character escaped, so neither a request stored before
// the kernel refused such text nor the arguments (which the kernel does not
// restrict) can rewrite or reorder what the approver's terminal shows.
func TestApprovalViewsEscapeControlAndFormatChars(t *testing.T) {
	w := newApprovalWorld(t)
	args := `{"customer_id":"cust-1\u009b2J","amount":450000,"currency":"USD","iban":"\u202eDE89 3704\u200b"}`
	out := w.submit(t, "issue_refund", args, `{"purpose":"order 8834","max_amount":{"units":450000,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	// What an earlier chiod stored: the repainting purpose, in the summary
	// and the intent.
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		req.Summary = "Agent wants to charge issue_refund on demo for 450000 USD: " + repaintingPurpose
		req.GovernedIntent, _ = json.Marshal(map[string]any{"purpose": repaintingPurpose, "max_amount": map[string]any{"units": 450000, "currency": "USD"}})
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("show: exit %d %s", code, se)
	}
	if terminalActive(so) {
		t.Errorf("`chio approval show` writes control or format characters to the terminal: %q", so)
	}
	// Escaped, not dropped: the approver sees that they are there.
	for _, want := range []string{`order 8834\u000d`, `\u001b[1A`, `\u202eDE89 3704\u200b`, `cust-1\u009b2J`} {
		if !strings.Contains(so, want) {
			t.Errorf("`chio approval show` does not show %s:\n%s", want, so)
		}
	}
	so, _, _ = w.run(adminEnv(), "approval", "list")
	if terminalActive(so) || !strings.Contains(so, out.ApprovalRequestID) {
		t.Errorf("`chio approval list` writes control or format characters to the terminal: %q", so)
	}
	so, _, _ = w.run(adminEnv(), "approval", "list", "--output", "jsonl")
	var req approval.Request
	if terminalActive(so) || json.Unmarshal([]byte(so), &req) != nil || req.Summary == "" || !strings.Contains(req.Summary, "\r") {
		t.Errorf("`chio approval list --output jsonl` is not the request as valid JSON with visible escapes: %q", so)
	}
	for _, args := range [][]string{{"approval", "list", "--output", "json"}, {"approval", "show", out.ApprovalRequestID, "--output", "json"}} {
		so, _, _ = w.run(adminEnv(), args...)
		if terminalActive(so) || !json.Valid([]byte(so)) || !strings.Contains(so, `\u202e`) {
			t.Errorf("`chio %s` is not valid JSON with visible escapes: %q", strings.Join(args, " "), so)
		}
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	if terminalActive(wo) || !strings.Contains(wo, "skipped "+out.ApprovalRequestID) {
		t.Errorf("`chio approval watch` writes control or format characters to the terminal: %q", wo)
	}
	so, se, _ = w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
	if terminalActive(so) || terminalActive(se) || !strings.Contains(se, `order 8834\u000d`) {
		t.Errorf("`chio approval approve` writes control or format characters to the terminal: %q %q", so, se)
	}
}

// TestWatchEscapesQuestionText: a question request's text and options are
// printed escaped by `chio approval watch` (requests stored before the
// kernel refused such text).
func TestWatchEscapesQuestionText(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "ask", `{"prompt":"Which carrier?","questions":[{"id":"carrier","text":"Carrier","type":"single","options":["UPS","DHL"]}]}`, "")
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		req.Summary = "Which carrier?\x1b[2K\r"
		req.Questions, _ = json.Marshal([]approval.Question{{ID: "carrier", Text: "Carrier\x1b[8m", Type: approval.QuestionSingle, Options: []string{"UPS\u202e", "DHL"}}})
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("a\nDHL\n\n"), "--key", w.key("lead"))
	if terminalActive(wo) || !strings.Contains(wo, "question 1: Carrier\\u001b[8m\n    1) UPS\\u202e\n    2) DHL\n") ||
		!strings.Contains(wo, `Carrier\u001b[8m [one of options 1-2 above: its number or its text]: `) {
		t.Errorf("`chio approval watch` writes control or format characters to the terminal: %q", wo)
	}
}

// invisibleOutsideCf: characters that draw nothing or only a blank but are
// not format characters (so strconv.IsGraphic passes them): a combining
// grapheme joiner, variation selectors, a Hangul filler, the braille blank.
const invisibleOutsideCf = "\u034f\ufe00\ufe0f\U000E0100\u3164\u2800"

// TestApprovalViewsEscapeInvisibleCharsOutsideCf: arguments (which the
// kernel does not restrict) holding default-ignorable characters of other
// categories than Cf, or a blank symbol, are printed by `chio approval
// show` with each one escaped: printed raw, "DE89<filler> 3704" reads as
// another IBAN and the approver cannot see the difference.
func TestApprovalViewsEscapeInvisibleCharsOutsideCf(t *testing.T) {
	w := newApprovalWorld(t)
	args := `{"customer_id":"cust-1","amount":450000,"currency":"USD","iban":"DE89` + invisibleOutsideCf + ` 3704"}`
	out := w.submit(t, "issue_refund", args, `{"purpose":"order 8834","max_amount":{"units":450000,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	for _, cmd := range [][]string{{"approval", "show", out.ApprovalRequestID}, {"approval", "show", out.ApprovalRequestID, "--output", "json"}} {
		so, se, code := w.run(adminEnv(), cmd...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", cmd, code, se)
		}
		if strings.ContainsAny(so, invisibleOutsideCf) || !strings.Contains(so, `DE89\u034f\ufe00\ufe0f\udb40\udd00\u3164\u2800 3704`) {
			t.Errorf("`chio %s` prints invisible characters raw, or not as escapes:\n%s", strings.Join(cmd, " "), so)
		}
	}
}
