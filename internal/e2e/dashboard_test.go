package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// The approvers below hold the DEMO keys of examples/keys.
const (
	financeLeadKey = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
	cfoKey         = "ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588"
	dbaKey         = "ed25519:0ddc81cff06ad776b7c82709851c17dff819f39e3c5d41393f40c1b8fd3e4524"
)

// channelsPolicy is the policy of the dashboard and email tests: refunds
// above 200 wait for the Finance Lead or the CFO; "refunds-edit" also shows
// the arguments so they can be amended; the DBA approves only "db".
const channelsPolicy = `
[kernel]
public_url = "%[1]s"
# Some tests park more than the default per-agent cap (stream replay bounds).
max_pending_approvals_per_agent = 1000

[[servers]]
id = "payments"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "issue_refund"
amount = "/amount"
currency = "/currency"
action = "charge"
category = "financial"
[[servers.tools]]
name = "edit_refund"
action = "charge"
amount = "/amount"
currency = "/currency"
[[servers.tools]]
name = "write_rows"
action = "write"

[[grants]]
id = "refunds"
server = "payments"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 3600
channels = [%[2]s]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
contact = { email = "finance@example.com" }
[[grants.approval.approvers]]
public_key = "` + cfoKey + `"
display_name = "CFO"
contact = { email = "cfo@example.com" }

[[grants]]
id = "refunds-edit"
server = "payments"
tool = "edit_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 1800
expose_arguments = true
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"

[[servers]]
id = "assistant"
transport = "builtin"

[[grants]]
id = "ask"
server = "assistant"
tool = "ask"
[grants.approval]
timeout_seconds = 900
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"

[[grants]]
id = "confirm"
server = "assistant"
tool = "confirm"
[grants.approval]
timeout_seconds = 900
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"

[[grants]]
id = "db"
server = "payments"
tool = "write_rows"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + dbaKey + `"
display_name = "DBA on call"
%[3]s`

// echoDispatcher answers every call with its arguments, so an amendment
// shows in the output; arguments with "fail":true make the tool fail,
// "lose":true lose the tool's answer after the call was sent (outcome
// unknown), "unreachable":true keep the call from reaching the tool;
// "hold":NAME holds the call until heldCalls' channel NAME is closed.
type echoDispatcher struct{}

func (echoDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	holdCall(r.Arguments)
	switch args := string(r.Arguments); {
	case strings.Contains(args, `"fail":true`):
		return kernel.DispatchResult{ToolError: "card network timeout"}, nil
	case strings.Contains(args, `"lose":true`):
		return kernel.DispatchResult{}, &kernel.DeliveryError{Err: errors.New("connection reset after the call was sent")}
	case strings.Contains(args, `"unreachable":true`):
		return kernel.DispatchResult{}, &kernel.DeliveryError{Err: errors.New("connection refused"), NotDelivered: true}
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"done":` + string(r.Arguments) + `}`)}, nil
}

// liveKernel is an in-process chiod: kernel, bolt store and the HTTP API
// with the channel routes, on a loopback httptest server. (Until the daemon
// wires the dashboard and email channels, this stands in for the binary.)
type liveKernel struct {
	k     *kernel.Kernel
	api   *httpapi.Server
	srv   *httptest.Server
	url   string
	token string
	seq   atomic.Int64
	caps  map[string]json.RawMessage // grant → capability of agentKey
	agent keys.PrivateKey
}

// startLiveKernel starts the server; mount adds channel routes before it
// serves. channels is the refunds grant's channel list (TOML array body);
// extraTOML is appended to the policy ([channels.*] tables).
func startLiveKernel(t *testing.T, channels, extraTOML string, notifier func(*kernel.Kernel) kernel.Notifier, mount func(*liveKernel)) *liveKernel {
	t.Helper()
	lk := &liveKernel{token: "admin-e2e", caps: map[string]json.RawMessage{}}
	var nf kernel.Notifier
	late := &lateNotifier{}
	if notifier != nil {
		nf = late
	}
	// The URL is known only once listening: testkit starts the listener, then the policy.
	w := testkit.NewWorld(t, testkit.Options{PolicyFor: func(url string) string { return fmt.Sprintf(channelsPolicy, url, channels, extraTOML) },
		PolicyName: "channels.toml", Dispatcher: echoDispatcher{}, Notifier: nf, Serve: true, AdminToken: lk.token,
		BeforeServe: func(w *testkit.World) {
			lk.k, lk.api, lk.srv, lk.url = w.Kernel, w.API, w.Srv, w.URL
			if notifier != nil {
				late.set(notifier(lk.k))
			}
			if mount != nil {
				mount(lk)
			}
		}})
	lk.agent = w.Agent
	for _, g := range []string{"refunds", "refunds-edit", "db", "ask", "confirm"} {
		raw, _, err := lk.k.IssueCapability(lk.agent.Public(), []string{g}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		lk.caps[g] = raw
	}
	return lk
}

// lateNotifier lets a channel that needs the kernel be built after it.
type lateNotifier struct {
	mu sync.Mutex
	n  kernel.Notifier
}

func (l *lateNotifier) set(n kernel.Notifier) { l.mu.Lock(); l.n = n; l.mu.Unlock() }

func (l *lateNotifier) Notify(event string, req *approval.Request) {
	l.mu.Lock()
	n := l.n
	l.mu.Unlock()
	if n != nil {
		n.Notify(event, req)
	}
}

// submit makes a call as the agent and returns the kernel's outcome.
func (lk *liveKernel) submit(t *testing.T, grant, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	return lk.submitWith(t, lk.caps[grant], grant, tool, args, intent)
}

// submitWith makes a call under the capability capRaw.
func (lk *liveKernel) submitWith(t *testing.T, capRaw json.RawMessage, grant, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	server := "payments"
	if grant == "ask" || grant == "confirm" {
		server = "assistant"
	}
	c := &kernel.ToolCall{RequestID: fmt.Sprintf("req-%d-%d", time.Now().UnixNano(), lk.seq.Add(1)), Capability: capRaw,
		Server: server, Tool: tool, Arguments: json.RawMessage(args)}
	if intent != "" {
		c.GovernedIntent = json.RawMessage(intent)
	}
	testkit.Sign(t, c, lk.agent, time.Now())
	out, err := lk.k.Submit(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (lk *liveKernel) pendingRefund(t *testing.T, units int, purpose string) *kernel.Outcome {
	t.Helper()
	out := lk.submit(t, "refunds", "issue_refund", fmt.Sprintf(`{"order":"A-%d","amount":%d,"currency":"USD"}`, lk.seq.Load()+1000, units),
		fmt.Sprintf(`{"purpose":%q,"max_amount":{"units":%d,"currency":"USD"}}`, purpose, units))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending_approval, got %+v", out)
	}
	return out
}

// get sends an admin GET and decodes the JSON answer.
func (lk *liveKernel) get(t *testing.T, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", lk.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+lk.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %d: %v", path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

// awaitCall long-polls GET /v1/calls/{id}?wait= like `chio await` does.
func (lk *liveKernel) awaitCall(t *testing.T, id string) chan httpapi.CallStatus {
	ch := make(chan httpapi.CallStatus, 1)
	go func() {
		for range 10 {
			var st httpapi.CallStatus
			req, _ := http.NewRequest("GET", lk.url+"/v1/calls/"+id+"?wait=20s", nil)
			req.Header.Set("Authorization", "Bearer "+lk.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Status != kernel.StatusPendingApproval && st.Status != kernel.StatusDispatching {
				ch <- st
				return
			}
		}
		close(ch)
	}()
	return ch
}

// finalReceipt returns the allow/deny receipt that closed approval id.
func (lk *liveKernel) finalReceipt(t *testing.T, approvalID string) *receipt.Receipt {
	t.Helper()
	var page httpapi.ReceiptPage
	lk.get(t, "/v1/receipts?meta="+url.QueryEscape("approval_request_id="+approvalID), &page)
	for _, raw := range page.Receipts {
		var r receipt.Receipt
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Decision.Verdict != receipt.Incomplete {
			return &r
		}
	}
	t.Fatalf("no final receipt for %s among %d", approvalID, len(page.Receipts))
	return nil
}

// chromium returns the browser to drive. Without one the test is skipped,
// except under CI (CI set, as CI services and .ci/run's callers set it),
// where a missing browser is a failure: the dashboard must be tested there.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and no Chromium is installed: .ci/run installs Debian's chromium (apt-get install chromium)")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); with CI=true this is a failure")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	// The first run starts the browser and must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// browse runs steps with a timeout and fails the test showing the page.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		pageFail(t, ctx, what, err)
	}
}

// read runs one action that returns a value.
func read[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		pageFail(t, ctx, what, err)
	}
	return v
}

func pageFail(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerText`))
	t.Fatalf("%s: %v\npage:\n%s", what, err, page)
}

func card(id string) string { return `article[data-id="` + id + `"]` }

type css = chromedp.CSS

// press waits for a button and clicks it through the DOM: a mouse click at
// computed coordinates can miss while cards enter and leave the list.
func press(sel string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	return chromedp.Steps(
		chromedp.WaitVisible(css(sel)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(document.querySelector(`+string(q)+`).click(), true)`)(ctx, t)
			return err
		}),
	)
}

func TestDashboardInChromium(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	ctx := newBrowser(t)
	root := repoRoot()

	// The page: CSP and no external assets.
	resp, err := http.Get(lk.url + "/dashboard/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP = %q", csp)
	}

	// 1. Open the page and import the Finance Lead's key file. The picker is
	// one control ("Choose a .pem file…"), not that and the browser's own
	// "Choose File" button beside it.
	browse(t, ctx, "open", chromedp.Navigate(lk.url+"/dashboard/"), chromedp.WaitVisible(css("#setup")))
	if hidden := read(t, ctx, "native file input", chromedp.Evaluate[bool](`(() => {
		const i = document.querySelector('#key-file'), r = i.getBoundingClientRect();
		return getComputedStyle(i).opacity === '0' && r.width <= 1 && r.height <= 1;
	})()`)); !hidden {
		t.Fatal("the native file input is visible beside the picker")
	}
	browse(t, ctx, "import key",
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(root, "examples/keys/finance-lead.pem")}),
		chromedp.WaitVisible(css("#tabs")),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
	)
	who := read(t, ctx, "identity", chromedp.Text(css("#who-name")))
	whoKey := read(t, ctx, "identity key", chromedp.AttributeValue(css("#who-key"), "title")).Value
	if who != "Finance Lead" || whoKey != financeLeadKey {
		t.Fatalf("signed in as %q %q", who, whoKey)
	}

	// 2. A refund created after the page loaded appears live.
	pend := lk.pendingRefund(t, 450, "Refund for a damaged order")
	lk.pendingRefund(t, 1200, "Duplicate charge on invoice 2291")
	edit := lk.submit(t, "refunds-edit", "edit_refund", `{"order":"A-77","amount":900,"currency":"USD"}`,
		`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)
	if edit.Status != kernel.StatusPendingApproval {
		t.Fatalf("edit refund: %+v", edit)
	}
	ask := lk.submit(t, "ask", "ask", `{"prompt":"Which carrier should ship the replacement?","questions":[`+
		`{"id":"carrier","text":"Carrier","type":"single","options":["UPS","DHL","FedEx"]},`+
		`{"id":"insure","text":"Add insurance?","type":"single","options":["yes","no"]}]}`, "")
	if ask.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v", ask)
	}
	conf := lk.submit(t, "confirm", "confirm", `{"prompt":"Ship release 2.4 to production?","details":{"service":"checkout","version":"2.4.0","window":"Tue 10:00 UTC"}}`, "")
	if conf.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm: %+v", conf)
	}
	browse(t, ctx, "live card", chromedp.WaitVisible(css(card(pend.ApprovalRequestID))),
		chromedp.WaitVisible(css(card(edit.ApprovalRequestID))), chromedp.WaitVisible(css(card(ask.ApprovalRequestID))),
		chromedp.WaitVisible(css(card(conf.ApprovalRequestID))))
	// Who asked: the grant the agent's capability matched, and its key;
	// why, in words (the guard's name stays in the tooltip).
	asked := read(t, ctx, "asked by", chromedp.Text(css(card(pend.ApprovalRequestID)+" .asker dd")))
	why := read(t, ctx, "why", chromedp.Text(css(card(pend.ApprovalRequestID)+" .why-asked dd")))
	if !strings.Contains(asked, "an agent holding grant refunds") || !strings.Contains(asked, "ed25519:") ||
		why != "the amount is at or above the approval threshold" {
		t.Fatalf("refund card: asked %q why %q", asked, why)
	}
	// The confirm card: the prompt once, its details as a list, no raw
	// JSON; confirm requests and questions are declined, not denied.
	confText := read(t, ctx, "confirm card", chromedp.Text(css(card(conf.ApprovalRequestID))))
	confDetails := read(t, ctx, "confirm details", chromedp.Text(css(card(conf.ApprovalRequestID)+" .confirm-details")))
	if strings.Count(confText, "Ship release 2.4 to production?") != 1 || strings.Contains(confText, `"prompt"`) || strings.Contains(confText, "{") ||
		!strings.Contains(confDetails, "version") || !strings.Contains(confDetails, "2.4.0") || strings.Contains(confText, "hitl") ||
		!strings.Contains(confText, "the agent asks you to confirm") {
		t.Fatalf("confirm card:\n%s", confText)
	}
	for _, id := range []string{conf.ApprovalRequestID, ask.ApprovalRequestID} {
		if b := read(t, ctx, "decline", chromedp.Text(css(card(id)+` button[data-action="deny"]`))); b != "Decline" {
			t.Fatalf("%s deny button says %q", id, b)
		}
	}
	if b := read(t, ctx, "deny", chromedp.Text(css(card(pend.ApprovalRequestID)+` button[data-action="deny"]`))); b != "Deny" {
		t.Fatalf("tool call deny button says %q", b)
	}
	summary := read(t, ctx, "summary", chromedp.Text(css(card(pend.ApprovalRequestID)+" .summary")))
	amount := read(t, ctx, "amount", chromedp.Text(css(card(pend.ApprovalRequestID)+" .amount dd")))
	deadline := read(t, ctx, "deadline", chromedp.Text(css(card(pend.ApprovalRequestID)+" .countdown")))
	if !strings.Contains(summary, "450 USD") || amount != "450 USD" || !strings.Contains(deadline, "m") && !strings.Contains(deadline, ":") {
		t.Fatalf("card: summary %q amount %q deadline %q", summary, amount, deadline)
	}

	// The screenshot for docs/ (written there with CHIO_UPDATE_SCREENSHOT=1).
	browse(t, ctx, "settle", chromedp.Sleep(500*time.Millisecond))
	shot := read(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	out := filepath.Join(t.TempDir(), "dashboard.png")
	if os.Getenv("CHIO_UPDATE_SCREENSHOT") != "" {
		out = filepath.Join(root, "docs", "dashboard.png")
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}

	// 3. Approve with a note: the agent's long-poll returns and the allow
	// receipt names the approver, the channel and the note.
	waiter := lk.awaitCall(t, pend.RequestID)
	c := card(pend.ApprovalRequestID)
	browse(t, ctx, "approve",
		chromedp.SendKeys(css(c+" textarea.note"), "Customer sent photos; approved."),
		chromedp.Click(css(c+` button[data-action="approve"]`)), // a real mouse click
		chromedp.WaitVisible(css(c+" .card-ok")),
		// The decided card holds still while the pointer is over the list
		// (TestDashboardCardsHoldStillUnderThePointer) and goes once it leaves.
		chromedp.WaitVisible(css(c+".gone")),
		chromedp.MouseEvent(chromedp.MouseMoved, 2, 2),
		chromedp.WaitNotPresent(css(c)),
	)
	select {
	case st := <-waiter:
		if st.Status != kernel.StatusAllowed || st.Approval == nil || st.Approval.Note != "Customer sent photos; approved." {
			t.Fatalf("call after approve: %+v %+v", st, st.Approval)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's long-poll did not return")
	}
	r := lk.finalReceipt(t, pend.ApprovalRequestID)
	if r.Decision.Verdict != receipt.Allow || r.Metadata["approver_display_name"] != "Finance Lead" ||
		r.Metadata["channel"] != "dashboard" || r.Metadata["note"] != "Customer sent photos; approved." || r.Metadata["approver"] != financeLeadKey {
		t.Fatalf("allow receipt: %+v %v", r.Decision, r.Metadata)
	}

	// 4. Deny, with a reason.
	den := lk.pendingRefund(t, 5000, "Refund to a new card")
	waiter = lk.awaitCall(t, den.RequestID)
	c = card(den.ApprovalRequestID)
	browse(t, ctx, "deny",
		chromedp.WaitVisible(css(c)),
		chromedp.SendKeys(css(c+" textarea.note"), "Card does not match the order."),
		press(c+` button[data-action="deny"]`),
		chromedp.WaitNotPresent(css(c)),
	)
	select {
	case st := <-waiter:
		if st.Status != kernel.StatusDenied {
			t.Fatalf("call after deny: %+v", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's long-poll did not return after deny")
	}
	r = lk.finalReceipt(t, den.ApprovalRequestID)
	if r.Decision.Verdict != receipt.Deny || r.Decision.Guard != "human-approval" || r.Metadata["channel"] != "dashboard" ||
		r.Metadata["note"] != "Card does not match the order." {
		t.Fatalf("deny receipt: %+v %v", r.Decision, r.Metadata)
	}

	// 5. Amend: the grant exposes the arguments; approve a smaller amount.
	waiter = lk.awaitCall(t, edit.RequestID)
	c = card(edit.ApprovalRequestID)
	browse(t, ctx, "amend",
		press(c+` button[data-action="amend"]`),
		chromedp.WaitVisible(css(c+" textarea.amend-args")),
		chromedp.SetValue(css(c+" textarea.amend-args"), `{"order":"A-77","amount":400,"currency":"USD"}`),
		chromedp.SendKeys(css(c+" textarea.note"), "Half now, half after the return."),
		press(c+` button[data-action="amend-submit"]`),
		chromedp.WaitNotPresent(css(c)),
	)
	select {
	case st := <-waiter:
		if st.Status != kernel.StatusAllowed || st.Approval == nil || !st.Approval.Amended ||
			!strings.Contains(string(st.Output), `"amount":400`) {
			t.Fatalf("call after amend: %+v output %s", st.Approval, st.Output)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's long-poll did not return after amend")
	}
	r = lk.finalReceipt(t, edit.ApprovalRequestID)
	if r.Decision.Verdict != receipt.Allow || r.Metadata["amended"] != true || r.Metadata["channel"] != "dashboard" {
		t.Fatalf("amend receipt: %+v %v", r.Decision, r.Metadata)
	}

	// 5b. A question: the form's answers are signed and returned to the agent.
	waiter = lk.awaitCall(t, ask.RequestID)
	c = card(ask.ApprovalRequestID)
	browse(t, ctx, "answer",
		press(c+` input[value="DHL"]`),
		press(c+` input[value="yes"]`),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitNotPresent(css(c)),
	)
	select {
	case st := <-waiter:
		if st.Status != kernel.StatusAllowed || !strings.Contains(string(st.Output), `"carrier":"DHL"`) || !strings.Contains(string(st.Output), `"insure":"yes"`) {
			t.Fatalf("call after answer: %+v output %s", st.Approval, st.Output)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's long-poll did not return after the answers")
	}

	// 5c. Confirm.
	c = card(conf.ApprovalRequestID)
	browse(t, ctx, "confirm", press(c+` button[data-action="approve"]`), chromedp.WaitNotPresent(css(c)))

	// 5d. An approval is not an execution. The capability is revoked while
	// the request waits: the approval is signed, the call does not run,
	// and the card says so and why.
	revCap, revInfo, err := lk.k.IssueCapability(lk.agent.Public(), []string{"refunds"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rev := lk.submitWith(t, revCap, "refunds", "issue_refund", `{"order":"A-501","amount":700,"currency":"USD"}`, `{"purpose":"Refund a lost parcel","max_amount":{"units":700,"currency":"USD"}}`)
	if err := lk.k.Revoke(context.Background(), revInfo.ID); err != nil {
		t.Fatal(err)
	}
	c = card(rev.ApprovalRequestID)
	browse(t, ctx, "approve after revocation",
		chromedp.WaitVisible(css(c)),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(c+" .card-error")),
	)
	if msg := read(t, ctx, "revoked card", chromedp.Text(css(c+" .card-error"))); !strings.Contains(msg, "Approved, but the call did not run: denied by the capability guard: capability revoked") {
		t.Fatalf("revoked: %q", msg)
	}
	// The tool fails: approved, and the card says the tool failed.
	failing := lk.submit(t, "refunds", "issue_refund", `{"order":"A-502","amount":650,"currency":"USD","fail":true}`, `{"purpose":"Refund a damaged item","max_amount":{"units":650,"currency":"USD"}}`)
	c = card(failing.ApprovalRequestID)
	browse(t, ctx, "approve a failing tool",
		chromedp.WaitVisible(css(c)),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(c+" .card-error")),
	)
	if msg := read(t, ctx, "failed card", chromedp.Text(css(c+" .card-error"))); !strings.Contains(msg, "Approved — the tool failed: card network timeout") {
		t.Fatalf("tool failed: %q", msg)
	}

	// 6. History lists the resolved requests with links to their receipts,
	// and says who or what decided: a person, or a guard.
	row := func(id string) string { return `#history-rows tr[data-id="` + id + `"]` }
	browse(t, ctx, "history",
		press("#tab-history"),
		chromedp.WaitVisible(css(row(pend.ApprovalRequestID)+` a.receipt-link`)),
		chromedp.WaitVisible(css(row(den.ApprovalRequestID)+` .pill-denied`)),
		chromedp.WaitVisible(css(row(edit.ApprovalRequestID)+` .pill-approved`)),
		chromedp.WaitVisible(css(row(rev.ApprovalRequestID)+` .by-guard`)),
		chromedp.WaitVisible(css(row(failing.ApprovalRequestID)+` .pill-tool-failed`)),
	)
	for id, want := range map[string][2]string{
		den.ApprovalRequestID:     {"Denied by Finance Lead: Card does not match the order.", "Finance Lead"},
		rev.ApprovalRequestID:     {"Approved by Finance Lead, but denied by the capability guard: capability revoked during the approval wait", "the capability guard"},
		failing.ApprovalRequestID: {"Approved by Finance Lead — the tool failed: card network timeout", "Finance Lead"},
		pend.ApprovalRequestID:    {"Approved by Finance Lead — executed", "Finance Lead"},
		edit.ApprovalRequestID:    {"Approved by Finance Lead, amended to 400 USD (asked: 900 USD) — executed", "Finance Lead"},
		conf.ApprovalRequestID:    {"Confirmed by Finance Lead", "Finance Lead"},
	} {
		outcome := read(t, ctx, "history outcome", chromedp.Text(css(row(id)+" .h-outcome")))
		by := read(t, ctx, "history by", chromedp.Text(css(row(id)+" td:nth-child(4)")))
		if outcome != want[0] || by != want[1] {
			t.Errorf("history %s: %q by %q, want %q by %q", id, outcome, by, want[0], want[1])
		}
	}
	if os.Getenv("CHIO_UPDATE_SCREENSHOT") != "" {
		shot := read(t, ctx, "history screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(root, "docs", "dashboard-history.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := read(t, ctx, "history links", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#history-rows a.receipt-link')).map(a => a.getAttribute('href'))`))
	browse(t, ctx, "back to pending", press("#tab-pending"))
	if len(links) < 3 || !strings.HasPrefix(links[0], "/v1/receipts/rc-") {
		t.Fatalf("history links: %v", links)
	}

	// 7. A key that is an approver, but not of this request (the DBA's),
	// pasted as PEM: the kernel refuses and the card shows why.
	left := lk.pendingRefund(t, 300, "Late delivery")
	dbaPEM, err := os.ReadFile(filepath.Join(root, "examples/keys/dba.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c = card(left.ApprovalRequestID)
	// Signed out everywhere first: the Finance Lead's session in another
	// browser (here, one opened over the API) ends with this one.
	lead, err := keys.LoadPrivateKey(filepath.Join(root, "examples/keys/finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := signInAt(t, lk.url, lead)
	if code := sessionStatus(t, lk.url, elsewhere); code != 200 {
		t.Fatalf("the other browser's session: %d", code)
	}
	browse(t, ctx, "untrusted approver",
		press("#signout-all"),
		chromedp.WaitVisible(css("#setup")),
		press(".paste summary"),
		chromedp.SetValue(css("#key-pem"), string(dbaPEM)),
		press("#key-import"),
		chromedp.WaitVisible(css(c)),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(c+" .card-error")),
	)
	if code := sessionStatus(t, lk.url, elsewhere); code != 401 {
		t.Fatalf("Sign out everywhere left the Finance Lead's other session answering %d, want 401", code)
	}
	cardErr := read(t, ctx, "card error", chromedp.Text(css(c+" .card-error")))
	if !strings.Contains(cardErr, "approval_rejected") || !strings.Contains(cardErr, "not trusted for this request") {
		t.Fatalf("untrusted approver error: %q", cardErr)
	}

	// 8. A freshly generated key, in no policy: sign-in is refused, the error
	// is shown with the key to register, and nothing can be read.
	browse(t, ctx, "wrong key",
		press("#signout"),
		chromedp.WaitVisible(css("#setup")),
		press("#key-generate"),
		chromedp.WaitVisible(css("#registered")),
	)
	globalErr := read(t, ctx, "global error", chromedp.Text(css("#global-error")))
	myKey := read(t, ctx, "my key", chromedp.Text(css("#my-pubkey")))
	if !strings.Contains(globalErr, "approval_rejected") || !strings.Contains(globalErr, "not an approver") {
		t.Fatalf("wrong key error: %q", globalErr)
	}
	if _, err := keys.ParsePublicKey(myKey); err != nil {
		t.Fatalf("generated key shown as %q: %v", myKey, err)
	}
	var view struct {
		Status string `json:"status"`
	}
	lk.get(t, "/approvals/"+left.ApprovalRequestID, &view)
	if view.Status != "pending" {
		t.Fatalf("request after refused keys: %s", view.Status)
	}
}

// sessionStatus is GET /v1/session's status for a session cookie value.
func sessionStatus(t *testing.T, base, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/session", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
