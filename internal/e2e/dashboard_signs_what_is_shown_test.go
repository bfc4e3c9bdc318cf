package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/channels/dashboard"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// dashboardAsLead serves the dashboard; open opens it in Chromium signed
// in as the Finance Lead.
func dashboardAsLead(t *testing.T) (lk *liveKernel, open func() context.Context) {
	t.Helper()
	return dashboardAsLeadWith(t, "")
}

// dashboardAsLeadWith is dashboardAsLead with extraTOML (grants) in the
// policy.
func dashboardAsLeadWith(t *testing.T, extraTOML string) (lk *liveKernel, open func() context.Context) {
	t.Helper()
	chromium(t)
	lk = startLiveKernel(t, `"dashboard"`, extraTOML, nil, mountDashboard(t))
	return lk, func() context.Context {
		ctx := newBrowser(t)
		browse(t, ctx, "open and import key",
			chromedp.Navigate(lk.url+"/dashboard/"),
			chromedp.WaitVisible(css("#setup")),
			chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
			chromedp.WaitReady(css(`#live[data-state="live"]`)),
		)
		return ctx
	}
}

// mountDashboard serves the dashboard on a live kernel's API.
func mountDashboard(t *testing.T) func(*liveKernel) {
	return func(lk *liveKernel) {
		h, err := dashboard.New(dashboard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lk.api.Handle(dashboard.Prefix, h)
	}
}

// reloadDashboardPolicy puts the dashboard channel's policy with
// extraTOML (grants) in force on lk, as a reload does.
func (lk *liveKernel) reloadDashboardPolicy(t *testing.T, extraTOML string) {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(channelsPolicy, lk.url, `"dashboard"`, extraTOML)), "channels.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.k.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// ranWithin returns what became of a call, or nil if it did not run
// within d.
func ranWithin(waiter chan httpapi.CallStatus, d time.Duration) *httpapi.CallStatus {
	select {
	case st, ok := <-waiter:
		if ok {
			return &st
		}
	case <-time.After(d):
	}
	return nil
}

// TestDashboardAmendSignsOnlyWhatWasTyped: the amend box signs the value
// the approver typed or nothing. JSON.parse would silently round an
// integer beyond 2^53 (9007199254740993 → …992, which the kernel accepts)
// and keep the last of two "amount" members (the approver who adds
// "amount": 400 above the prefilled 900 would sign 900); an inexact number
// and names differing only in case are likewise not what the kernel would
// read. Each is refused in the page with a message, nothing is signed, the
// request stays pending, and a correct amendment then runs as typed.
func TestDashboardAmendSignsOnlyWhatWasTyped(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.submit(t, "refunds-edit", "edit_refund", `{"order":"A-77","amount":900,"currency":"USD","ref":1}`,
		`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "open amend", chromedp.WaitVisible(css(sel)), press(sel+` button[data-action="amend"]`),
		chromedp.WaitVisible(css(sel+" textarea.amend-args")))
	cases := []struct{ typed, says string }{
		{`{"order":"A-77","amount":400,"currency":"USD","ref":9007199254740993}`, "beyond ±2^53"},
		{"{\n  \"amount\": 400,\n  \"order\": \"A-77\",\n  \"amount\": 900,\n  \"currency\": \"USD\"\n}", `"amount" appears twice`},
		{`{"order":"A-77","amount":400,"currency":"USD","ref":{"id":1,"\u0069d":2}}`, `"id" appears twice`},
		{`{"order":"A-77","amount":400,"Amount":900,"currency":"USD"}`, "differ only in letter case"},
		{`{"order":"A-77","amount":400,"currency":"USD","ref":0.1000000000000000055511151231257827}`, "would be signed as 0.1"},
		{`{"order":"A-77","amount":400,"currency":"USD"} {}`, "trailing data"},
		{`["A-77",400]`, "must be a JSON object"},
	}
	for _, c := range cases {
		browse(t, ctx, "amend",
			chromedp.SetValue(css(sel+" textarea.amend-args"), c.typed),
			press(sel+` button[data-action="amend-submit"]`),
			chromedp.WaitVisible(css(sel+" .card-error")),
		)
		msg := read(t, ctx, "error", chromedp.Text(css(sel+" .card-error")))
		if !strings.Contains(msg, "not signed") || !strings.Contains(msg, c.says) {
			t.Errorf("typed %s: the page says %q, want it to refuse saying %q", c.typed, msg, c.says)
		}
	}
	if st := ranWithin(waiter, 2*time.Second); st != nil {
		t.Fatalf("a refused amendment was signed: the call ran with %s (%s)", st.Output, st.Status)
	}
	// What can be signed exactly is signed as typed: 2^53 itself, 1.50.
	browse(t, ctx, "amend correctly",
		chromedp.SetValue(css(sel+" textarea.amend-args"), `{"order":"A-77","amount":400,"currency":"USD","ref":9007199254740992,"rate":1.50}`),
		press(sel+` button[data-action="amend-submit"]`),
	)
	st := ranWithin(lk.awaitCall(t, out.RequestID), 20*time.Second)
	if st == nil || st.Status != kernel.StatusAllowed || !strings.Contains(string(st.Output), `"amount":400`) ||
		!strings.Contains(string(st.Output), `"ref":9007199254740992`) || !strings.Contains(string(st.Output), `"rate":1.5`) {
		t.Fatalf("a correct amendment did not run as typed: %+v", st)
	}
}

// TestDashboardDrawsArgumentsInTheOrderSent: arguments (which the kernel
// does not restrict) holding a bidi override are drawn in the order the
// tool receives them, the override shown as \u202E; the amend box shows
// the same escape, which approving unchanged signs back as the character
// itself.
func TestDashboardDrawsArgumentsInTheOrderSent(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.submit(t, "refunds-edit", "edit_refund",
		`{"order":"A-77","amount":900,"currency":"USD","iban":"\u202eDE89 3704 0044 0532 0130 00","memo":"x\u200by\u2066z"}`,
		`{"purpose":"Refund to IBAN DE89 3704 0044 0532 0130 00","max_amount":{"units":900,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	// Where 'D' (the first character the tool receives) and the final '0'
	// are drawn.
	reversed := read(t, ctx, "glyph order", chromedp.Evaluate[bool](`(() => {
		const c = document.querySelector('article[data-id="`+out.ApprovalRequestID+`"]');
		c.querySelector('details.args').open = true;
		const pre = c.querySelector('details.args pre');
		const node = pre.firstChild, s = node.textContent;
		const i = s.indexOf('DE89'), j = s.indexOf('00"', i) + 1;
		const at = (k) => { const r = document.createRange(); r.setStart(node, k); r.setEnd(node, k + 1); return r.getBoundingClientRect().left; };
		return at(i) > at(j);
	})()`))
	if reversed {
		t.Errorf("the Arguments pane draws the IBAN the tool receives (DE89 3704 …) right to left")
	}
	args := read(t, ctx, "arguments", chromedp.TextContent(css(sel+" details.args pre")))
	if strings.ContainsAny(args, "\u202e\u200b\u2066") || !strings.Contains(args, `"\u202EDE89 3704`) || !strings.Contains(args, `x\u200By\u2066z`) {
		t.Errorf("arguments drawn with raw format characters or without their escapes: %q", args)
	}
	browse(t, ctx, "amend unchanged", press(sel+` button[data-action="amend"]`), chromedp.WaitVisible(css(sel+" textarea.amend-args")))
	box := read(t, ctx, "amend box", chromedp.Value(css(sel+" textarea.amend-args")))
	if strings.ContainsRune(box, '\u202e') || !strings.Contains(box, `\u202EDE89`) {
		t.Errorf("the amend box shows a raw U+202E or hides it: %q", box)
	}
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "approve amended", press(sel+` button[data-action="amend-submit"]`))
	st := ranWithin(waiter, 20*time.Second)
	if st == nil || st.Status != kernel.StatusAllowed || !strings.Contains(string(st.Output), "\u202eDE89 3704") ||
		!strings.Contains(string(st.Output), "x\u200by\u2066z") {
		t.Fatalf("the unchanged arguments did not reach the tool as sent: %+v", st)
	}
}

// TestDashboardEscapesFormatCharsInRequestText: a request stored before
// the kernel refused format characters in the text it shows (summary,
// purpose, question text and options) is drawn with each one escaped; the
// option's value, which is what is signed, is kept as sent.
func TestDashboardEscapesFormatCharsInRequestText(t *testing.T) {
	_, open := dashboardAsLead(t)
	ctx := open()
	// The page's own upsert, as for a request from the stream.
	browse(t, ctx, "render", chromedp.Evaluate[chromedp.Void](`upsert({approval_id: 'ar-legacy', status: 'pending', kind: 'question',
		tool_server: 'assistant', tool_name: 'ask', subject_id: 'ed25519:00', quorum: 1, tier: 0,
		created_at: Math.floor(Date.now() / 1000), expires_at: Math.floor(Date.now() / 1000) + 600,
		summary: 'Pay \u202eDE89 3704\u200b', triggered_by: ['hitl'],
		governed_intent: {purpose: 'to \u2066IBAN\u2069 \u200eDE89\r'},
		questions: [{id: 'acct', text: 'Account \u202e1234', type: 'single', options: ['\u202eDE89', 'other\u2028']}]})`),
		chromedp.WaitVisible(css(card("ar-legacy"))))
	text := read(t, ctx, "card text", chromedp.TextContent(css(card("ar-legacy"))))
	if strings.ContainsAny(text, "\u202e\u200b\u2066\u2069\u200e\r\u2028") {
		t.Errorf("request text drawn with raw control or format characters: %q", text)
	}
	for _, want := range []string{`Pay \u202EDE89 3704\u200B`, `to \u2066IBAN\u2069 \u200EDE89\u000D`, `Account \u202E1234`, `\u202EDE89`, `other\u2028`} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %s: %q", want, text)
		}
	}
	value := read(t, ctx, "option value", chromedp.Evaluate[string](`document.querySelector('article[data-id="ar-legacy"] input[type=radio]').value`))
	if value != "\u202eDE89" {
		t.Errorf("the option's value (what is signed) is %q, want the option as sent", value)
	}
}

// TestDashboardEscapesInvisibleCharsOutsideCf: characters that draw
// nothing or only a blank without being format characters (a combining
// grapheme joiner, variation selectors, Hangul fillers, the braille blank)
// are drawn as escapes too, in request text and in arguments: raw,
// "DE89<filler> 3704" reads as "DE89 3704".
func TestDashboardEscapesInvisibleCharsOutsideCf(t *testing.T) {
	_, open := dashboardAsLead(t)
	ctx := open()
	browse(t, ctx, "render", chromedp.Evaluate[chromedp.Void](`upsert({approval_id: 'ar-hidden', status: 'pending', kind: 'question',
		tool_server: 'assistant', tool_name: 'ask', subject_id: 'ed25519:00', quorum: 1, tier: 0,
		created_at: Math.floor(Date.now() / 1000), expires_at: Math.floor(Date.now() / 1000) + 600,
		summary: 'Pay DE89\u3164 3704\u034f', triggered_by: ['hitl'],
		governed_intent: {purpose: 'to\u2800IBAN \u2764\ufe0f\ufe00 x\u{E0100}'},
		questions: [{id: 'acct', text: 'Account \uffa0\u115f', type: 'single', options: ['DE89\u180b', 'other']}]})`),
		chromedp.WaitVisible(css(card("ar-hidden"))))
	text := read(t, ctx, "card text", chromedp.TextContent(css(card("ar-hidden"))))
	if strings.ContainsAny(text, "\u3164\u034f\u2800\ufe0f\ufe00\U000E0100\uffa0\u115f\u180b") {
		t.Errorf("request text drawn with raw invisible characters: %q", text)
	}
	for _, want := range []string{`Pay DE89\u3164 3704\u034F`, `to\u2800IBAN ❤\uFE0F\uFE00 x\uDB40\uDD00`, `Account \uFFA0\u115F`, `DE89\u180B`} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %s: %q", want, text)
		}
	}
}

// TestDashboardSingleChoiceSignsOneAnswer: in a single-choice question
// with allow_other, typing an Other answer clears the ticked choice and
// ticking a choice clears the typed answer, so the one answer signed is
// the one the form shows (before, the choice was signed and the typed
// answer silently dropped).
func TestDashboardSingleChoiceSignsOneAnswer(t *testing.T) {
	lk, open := dashboardAsLead(t)
	ask := func() *kernel.Outcome {
		o := lk.submit(t, "ask", "ask", `{"prompt":"Which carrier?","questions":[`+
			`{"id":"carrier","text":"Carrier","type":"single","options":["UPS","DHL"],"allow_other":true}]}`, "")
		if o.Status != kernel.StatusPendingApproval {
			t.Fatalf("ask: %+v", o)
		}
		return o
	}
	typed, ticked := ask(), ask()
	ctx := open()
	cases := []struct {
		out   *kernel.Outcome
		steps []chromedp.Action[chromedp.Void]
		want  string
	}{
		{typed, []chromedp.Action[chromedp.Void]{press(card(typed.ApprovalRequestID) + ` input[value="UPS"]`),
			chromedp.SendKeys(css(card(typed.ApprovalRequestID)+" input.answer-other"), "FedEx Priority")}, `{"carrier":"FedEx Priority"}`},
		{ticked, []chromedp.Action[chromedp.Void]{chromedp.SendKeys(css(card(ticked.ApprovalRequestID)+" input.answer-other"), "FedEx Priority"),
			press(card(ticked.ApprovalRequestID) + ` input[value="DHL"]`)}, `{"carrier":"DHL"}`},
	}
	for _, c := range cases {
		sel := card(c.out.ApprovalRequestID)
		waiter := lk.awaitCall(t, c.out.RequestID)
		browse(t, ctx, "answer", append(append([]chromedp.Action[chromedp.Void]{chromedp.WaitVisible(css(sel))}, c.steps...),
			press(sel+` button[data-action="approve"]`))...)
		st := ranWithin(waiter, 20*time.Second)
		if st == nil || !strings.Contains(string(st.Output), `"answers":`+c.want) {
			t.Errorf("the form showed %s; signed: %+v", c.want, st)
		}
	}
	// Both set at once (the form's own handlers bypassed) is refused in the
	// page, not signed one way.
	both := ask()
	sel := card(both.ApprovalRequestID)
	browse(t, ctx, "both", chromedp.WaitVisible(css(sel)),
		chromedp.Evaluate[chromedp.Void](`(() => { const c = document.querySelector('`+sel+`');
			c.querySelector('input[value="UPS"]').checked = true; c.querySelector('input.answer-other').value = 'FedEx'; })()`),
		press(sel+` button[data-action="approve"]`), chromedp.WaitVisible(css(sel+" .card-error")))
	if msg := read(t, ctx, "error", chromedp.Text(css(sel+" .card-error"))); !strings.Contains(msg, "not both") {
		t.Errorf("a choice and an Other answer together: the page says %q", msg)
	}
}
