package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

const (
	botEnv    = "CHIO_TEST_SLACK_BOT"
	secretEnv = "CHIO_TEST_SLACK_SECRET"
	botToken  = "xoxb-test-token"
	secret    = "8f742231b10e8888abcd99yyyzzz85a5"
	publicURL = "https://chio.example"
	leadID    = "ULEAD01"
	cfoName   = "cfo"
)

const testPolicy = `
[kernel]
public_url = "https://chio.example"

[channels.slack]
bot_token_env = "CHIO_TEST_SLACK_BOT"
signing_secret_env = "CHIO_TEST_SLACK_SECRET"
channel = "#approvals"
api_url = "%[3]s"

[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
amount = "/amount"
currency = "/currency"
action = "charge"
[[servers.tools]]
name = "echo"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 600
channels = ["slack"]
slack_custodial = true
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
contact = { slack = "ULEAD01" }
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
contact = { slack = "UCFO" }

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["slack", "dashboard"]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
contact = { slack = "ULEAD01" }
`

// mockSlack records what chiod sends to the Slack API (the slacktest
// server routes it here).
type mockSlack struct {
	mu         sync.Mutex
	posts      []url.Values
	updates    []url.Values
	ephemerals []url.Values
	auth       []string
	seq        atomic.Int64
	// lostPostAnswers, while positive, makes chat.postMessage take the
	// message and drop the connection instead of answering: Slack posted
	// it, chiod never learns where.
	lostPostAnswers atomic.Int32
	// refusedPosts, while positive, makes chat.postMessage answer
	// ratelimited: Slack says it posted nothing.
	refusedPosts atomic.Int32
}

func (m *mockSlack) record(list *[]url.Values, ts bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		v, _ := url.ParseQuery(string(b))
		m.mu.Lock()
		*list = append(*list, v)
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		if list == &m.posts && m.lostPostAnswers.Add(-1) >= 0 {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		if list == &m.posts && m.refusedPosts.Add(-1) >= 0 {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		stamp := v.Get("ts")
		if ts || stamp == "" {
			stamp = fmt.Sprintf("1700000000.%06d", m.seq.Add(1))
		}
		ch := v.Get("channel")
		if ch == "#approvals" {
			ch = "C0APPROVALS" // Slack answers with the channel id
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": ch, "ts": stamp, "message_ts": stamp})
	}
}

func (m *mockSlack) snapshot() (posts, updates, ephemerals []url.Values) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]url.Values(nil), m.posts...), append([]url.Values(nil), m.updates...), append([]url.Values(nil), m.ephemerals...)
}

func newMock(t *testing.T) (*mockSlack, *slacktest.Server) {
	m := &mockSlack{}
	srv := slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", m.record(&m.posts, true))
		c.Handle("/chat.update", m.record(&m.updates, false))
		c.Handle("/chat.postEphemeral", m.record(&m.ephemerals, true))
	})
	srv.Start()
	t.Cleanup(srv.Stop)
	return m, srv
}

func env(k string) string {
	return map[string]string{botEnv: botToken, secretEnv: secret}[k]
}

type world struct {
	k         *kernel.Kernel
	store     *boltstore.Store
	ch        *slack.Channel
	mock      *mockSlack
	clk       *clock.Fake
	handler   http.Handler
	lead, cfo keys.PrivateKey
	agent     keys.PrivateKey
	capRaw    []byte
	dataDir   string
	tw        *testkit.World
	// lost, when set, drops the kernel's events before the hub: what a
	// chiod that died after a commit never delivered.
	lost atomic.Bool
}

// notifierFunc adapts a function to kernel.Notifier.
type notifierFunc func(event string, req *approval.Request)

func (f notifierFunc) Notify(event string, req *approval.Request) { f(event, req) }

// newWorld builds the kernel, the channel and a mock Slack; opts adjust
// the channel's options.
func newWorld(t *testing.T, opts ...func(*slack.Options)) *world {
	t.Helper()
	return worldWith(t, testPolicy, []string{"refunds", "echo"}, "req-slack-", opts...)
}

// worldWith is newWorld on another policy text (with the same %[1..3]s:
// the lead's and the CFO's keys, the mock's URL), the agent holding grants.
func worldWith(t *testing.T, policyText string, grants []string, requestPrefix string, opts ...func(*slack.Options)) *world {
	t.Helper()
	return worldOn(t, policyText, grants, requestPrefix, nil, opts...)
}

// worldOn is worldWith with the kernel's store wrapped (nil: not wrapped).
func worldOn(t *testing.T, policyText string, grants []string, requestPrefix string, wrap func(kernel.Store) kernel.Store, opts ...func(*slack.Options)) *world {
	t.Helper()
	w := &world{dataDir: t.TempDir(), clk: clock.NewFake(time.Now())}
	w.lead, _ = keys.Generate(nil)
	w.cfo, _ = keys.Generate(nil)
	w.agent, _ = keys.Generate(nil)
	var srv *slacktest.Server
	w.mock, srv = newMock(t)
	p, err := policy.Parse([]byte(fmt.Sprintf(policyText, w.lead.Public(), w.cfo.Public(), srv.GetAPIURL())), "slack.toml")
	if err != nil {
		t.Fatal(err)
	}
	// chiod holds the Finance Lead's custodial key, not the CFO's.
	if _, err := slack.InstallCustodialKey(w.dataDir, w.lead); err != nil {
		t.Fatal(err)
	}
	o := slack.Options{PublicURL: p.Kernel.PublicURL, DataDir: w.dataDir, Policy: p, Clock: w.clk, Getenv: env}
	for _, f := range opts {
		f(&o)
	}
	w.ch, err = slack.New(*p.Channels.Slack, o)
	if err != nil {
		t.Fatal(err)
	}
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{w.ch},
		Backoff: channels.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	notify := notifierFunc(func(event string, req *approval.Request) {
		if !w.lost.Load() {
			hub.Notify(event, req)
		}
	})
	w.tw = testkit.NewWorld(t, testkit.Options{Policy: p, DataDir: w.dataDir, Clock: w.clk, Notifier: notify,
		Agent: testkit.Key(w.agent), Grants: grants, RequestPrefix: requestPrefix, WrapStore: wrap})
	w.k, w.store, w.capRaw = w.tw.Kernel, w.tw.Store, w.tw.CapRaw
	w.handler = w.ch.InteractionsHandler(w.k)
	t.Cleanup(func() { hub.Close(); w.ch.Close() })
	return w
}

func (w *world) submit(t *testing.T, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	out := w.tw.Submit(t, tool, args, intent)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending, got %+v", out)
	}
	return out
}

func (w *world) refund(t *testing.T) *kernel.Outcome {
	return w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
}

// posted waits for the message of approval id and returns it.
func (w *world) posted(t *testing.T, id string) url.Values {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		posts, _, _ := w.mock.snapshot()
		for _, p := range posts {
			if strings.Contains(p.Get("blocks"), id) {
				return p
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no message posted for %s", id)
	return nil
}

// updated waits for a chat.update of ts whose blocks contain want.
func (w *world) updated(t *testing.T, ts, want string) url.Values {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, ups, _ := w.mock.snapshot()
		for _, u := range ups {
			if u.Get("ts") == ts && strings.Contains(u.Get("blocks"), want) {
				return u
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, ups, _ := w.mock.snapshot()
	t.Fatalf("no update of %s containing %q; updates: %v", ts, want, ups)
	return nil
}

// clickBody is a block_actions payload as Slack sends it, form-encoded.
func clickBody(user slack.SlackUser, action, approvalID string) []byte {
	p := map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user.ID, "username": user.Username, "name": user.Username, "team_id": "T0TEAM"},
		"api_app_id": "A0APP", "token": "legacy-verification-token-not-used",
		"container":    map[string]any{"type": "message", "message_ts": "1700000000.000001", "channel_id": "C0APPROVALS", "is_ephemeral": false},
		"trigger_id":   "123.456.abc",
		"team":         map[string]any{"id": "T0TEAM", "domain": "example"},
		"channel":      map[string]any{"id": "C0APPROVALS", "name": "approvals"},
		"response_url": "https://hooks.slack.com/actions/T0TEAM/1/xyz",
		"actions": []map[string]any{{
			"action_id": action, "block_id": slack.BlockActions, "value": approvalID, "type": "button",
			"text": map[string]any{"type": "plain_text", "text": "Approve"}, "action_ts": "1700000001.000200",
		}},
	}
	b, _ := json.Marshal(p)
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

type signedReq struct {
	body []byte
	ts   string
	sig  string
}

func (w *world) sign(body []byte, at time.Time, key string) signedReq {
	ts := strconv.FormatInt(at.Unix(), 10)
	return signedReq{body: body, ts: ts, sig: slack.Sign([]byte(key), ts, body)}
}

func (w *world) send(r signedReq) int {
	req := httptest.NewRequest("POST", slack.InteractionsPath, strings.NewReader(string(r.body)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if r.ts != "" {
		req.Header.Set(slack.HeaderTimestamp, r.ts)
	}
	if r.sig != "" {
		req.Header.Set(slack.HeaderSignature, r.sig)
	}
	rr := httptest.NewRecorder()
	w.handler.ServeHTTP(rr, req)
	return rr.Code
}

func (w *world) click(user slack.SlackUser, action, id string) int {
	return w.send(w.sign(clickBody(user, action, id), w.clk.Now(), secret))
}

func (w *world) ephemeralTo(user string) []string {
	_, _, eph := w.mock.snapshot()
	var out []string
	for _, e := range eph {
		if e.Get("user") == user {
			out = append(out, e.Get("text"))
		}
	}
	return out
}

func (w *world) approval(t *testing.T, id string) *approval.Request {
	t.Helper()
	req, err := w.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func (w *world) receiptMeta(t *testing.T, requestID string) map[string]any {
	t.Helper()
	rec, err := w.k.Call(requestID)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := w.store.View(func(tx kernel.ReadTx) error {
		b, err := tx.Receipt(rec.ReceiptID)
		raw = append([]byte(nil), b...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Decision map[string]any `json:"decision"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	r.Metadata["verdict"] = r.Decision["verdict"]
	return r.Metadata
}

var lead = slack.SlackUser{ID: leadID, Username: "lead"}

// blocks decodes the Block Kit JSON a call carried.
func blocks(t *testing.T, v url.Values) []map[string]any {
	t.Helper()
	var b []map[string]any
	if err := json.Unmarshal([]byte(v.Get("blocks")), &b); err != nil {
		t.Fatalf("blocks: %v: %s", err, v.Get("blocks"))
	}
	return b
}

func TestMessagePostedWithBlocks(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	msg := w.posted(t, id)
	if msg.Get("channel") != "#approvals" {
		t.Fatalf("channel %q", msg.Get("channel"))
	}
	w.mock.mu.Lock()
	a := w.mock.auth[0]
	w.mock.mu.Unlock()
	if a != "Bearer "+botToken && msg.Get("token") != botToken {
		t.Fatalf("bot token not sent: %q %q", a, msg.Get("token"))
	}
	if !strings.Contains(msg.Get("text"), "order 8834") {
		t.Fatalf("fallback text %q", msg.Get("text"))
	}
	b := blocks(t, msg)
	if b[0]["type"] != "section" || !strings.Contains(b[0]["text"].(map[string]any)["text"].(string), "Agent wants to charge issue_refund on demo for 450 USD: order 8834") {
		t.Fatalf("summary block: %v", b[0])
	}
	var fields []string
	for _, f := range b[1]["fields"].([]any) {
		fields = append(fields, f.(map[string]any)["text"].(string))
	}
	all := strings.Join(fields, "\n")
	agentShort := "ed25519:" + strings.TrimPrefix(w.agent.Public().String(), "ed25519:")[:8] + "…"
	for _, want := range []string{"*Amount*\n450 USD", "*Intent*\norder 8834", "*Agent*\n`" + agentShort + "`",
		"*Tool*\n`demo/issue_refund` (charge)", fmt.Sprintf("*Deadline*\n<!date^%d^", out.Deadline), "*Quorum*\n0/1 approvals", "*Kind*\ntool_call"} {
		if !strings.Contains(all, want) {
			t.Errorf("fields lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(b[2]["text"].(map[string]any)["text"].(string), `"amount":450`) {
		t.Errorf("exposed arguments not shown: %v", b[2])
	}
	act := b[len(b)-1]
	if act["type"] != "actions" || act["block_id"] != slack.BlockActions {
		t.Fatalf("actions block: %v", act)
	}
	els := act["elements"].([]any)
	if len(els) != 3 {
		t.Fatalf("want 3 buttons: %v", els)
	}
	btn := func(i int) map[string]any { return els[i].(map[string]any) }
	if btn(0)["action_id"] != slack.ActionApprove || btn(0)["value"] != id || btn(0)["style"] != "primary" {
		t.Errorf("approve button: %v", btn(0))
	}
	if btn(1)["action_id"] != slack.ActionDeny || btn(1)["value"] != id || btn(1)["style"] != "danger" {
		t.Errorf("deny button: %v", btn(1))
	}
	if btn(2)["url"] != publicURL+"/dashboard/#request="+id || btn(2)["text"].(map[string]any)["text"] != "Review & sign" {
		t.Errorf("review button: %v", btn(2))
	}
	// The reference is durable: one file under the data dir.
	file := filepath.Join(w.dataDir, "slack", "messages", id+".json")
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err == nil && strings.Contains(string(b), `"ts":"1700000000.000001"`) {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("reference not stored: %v %s", err, b)
		}
	}
}

func TestCustodialClickResolvesAndUpdates(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	msg := w.posted(t, id)
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	req := w.approval(t, id)
	if req.Status != approval.StatusApproved || len(req.Votes) != 1 {
		t.Fatalf("not approved: %+v", req)
	}
	v := req.Votes[0]
	if v.Approver != w.lead.Public().String() || v.Channel != "slack" || !v.Custodial || !strings.Contains(v.Note, "in Slack by "+leadID) {
		t.Fatalf("vote: %+v", v)
	}
	meta := w.receiptMeta(t, out.RequestID)
	if meta["verdict"] != "allow" || meta["custodial"] != true || meta["channel"] != "slack" || meta["approver_display_name"] != "Finance Lead" {
		t.Fatalf("receipt: %v", meta)
	}
	// The message is updated in place: outcome, who, receipt, no buttons.
	upd := w.updated(t, "1700000000.000001", "Approved")
	if upd.Get("channel") != "C0APPROVALS" || !strings.Contains(upd.Get("blocks"), "Finance Lead *approved* via slack (custodial key)") ||
		!strings.Contains(upd.Get("blocks"), req.Resolution.ReceiptID) || strings.Contains(upd.Get("blocks"), slack.ActionApprove) {
		t.Fatalf("update: %s", upd.Get("blocks"))
	}
	_ = msg
	if e := w.ephemeralTo(leadID); len(e) != 1 || !strings.Contains(e[0], "You approved "+id) {
		t.Fatalf("ephemeral: %v", e)
	}
	// A later click on the resolved request changes nothing.
	if code := w.click(lead, slack.ActionDeny, id); code != 200 {
		t.Fatalf("late click: %d", code)
	}
	if e := w.ephemeralTo(leadID); len(e) != 2 || !strings.Contains(e[1], "already approved") {
		t.Fatalf("ephemeral: %v", e)
	}
	if req := w.approval(t, id); req.Status != approval.StatusApproved || len(req.Votes) != 1 {
		t.Fatalf("changed: %+v", req)
	}
}

func TestCustodialDenyClick(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)
	if code := w.click(lead, slack.ActionDeny, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	req := w.approval(t, id)
	if req.Status != approval.StatusDenied || !req.Votes[0].Custodial {
		t.Fatalf("not denied: %+v", req)
	}
	meta := w.receiptMeta(t, out.RequestID)
	if meta["verdict"] != "deny" || meta["custodial"] != true {
		t.Fatalf("receipt: %v", meta)
	}
	w.updated(t, "1700000000.000001", "Denied")
}

// assertUntouched checks that no vote was recorded for id.
func (w *world) assertUntouched(t *testing.T, id, requestID string) {
	t.Helper()
	req := w.approval(t, id)
	if req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("request changed: %s votes=%d", req.Status, len(req.Votes))
	}
	if rec, _ := w.k.Call(requestID); rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("call changed: %s", rec.Status)
	}
}

func TestRefusedClicksChangeNothing(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)
	now := w.clk.Now()
	body := clickBody(lead, slack.ActionApprove, id)
	good := w.sign(body, now, secret)
	for name, c := range map[string]struct {
		r    signedReq
		code int
	}{
		"forged signature (wrong secret)": {w.sign(body, now, "not-the-secret"), 401},
		"signature of another body":       {signedReq{body: body, ts: good.ts, sig: w.sign(clickBody(lead, slack.ActionApprove, id+"0"), now, secret).sig}, 401},
		"tampered body":                   {signedReq{body: clickBody(lead, slack.ActionDeny, id), ts: good.ts, sig: good.sig}, 401},
		"signature for another timestamp": {signedReq{body: body, ts: strconv.FormatInt(now.Unix()+1, 10), sig: good.sig}, 401},
		"stale timestamp (6 min old)":     {w.sign(body, now.Add(-6*time.Minute), secret), 401},
		"timestamp 6 min ahead":           {w.sign(body, now.Add(6*time.Minute), secret), 401},
		"no signature":                    {signedReq{body: body, ts: good.ts}, 401},
		"no timestamp":                    {signedReq{body: body, sig: good.sig}, 401},
		"not v0":                          {signedReq{body: body, ts: good.ts, sig: strings.Replace(good.sig, "v0=", "v1=", 1)}, 401},
	} {
		t.Run(name, func(t *testing.T) {
			if code := w.send(c.r); code != c.code {
				t.Fatalf("got %d, want %d", code, c.code)
			}
			w.assertUntouched(t, id, out.RequestID)
		})
	}
	t.Run("body over 64 KiB", func(t *testing.T) {
		big := append(append([]byte(nil), body...), []byte("&pad="+strings.Repeat("x", slack.MaxInteractionBody))...)
		if code := w.send(w.sign(big, now, secret)); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("got %d", code)
		}
		w.assertUntouched(t, id, out.RequestID)
	})
	t.Run("GET", func(t *testing.T) {
		rr := httptest.NewRecorder()
		w.handler.ServeHTTP(rr, httptest.NewRequest("GET", slack.InteractionsPath, nil))
		if rr.Code != http.StatusMethodNotAllowed {
			t.Fatalf("got %d", rr.Code)
		}
	})
	t.Run("unmapped user, then its replay", func(t *testing.T) {
		stranger := slack.SlackUser{ID: "USTRANGER", Username: "mallory"}
		r := w.sign(clickBody(stranger, slack.ActionApprove, id), now, secret)
		if code := w.send(r); code != 200 {
			t.Fatalf("got %d", code)
		}
		if e := w.ephemeralTo("USTRANGER"); len(e) != 1 || e[0] != "You are not an approver for this request." {
			t.Fatalf("ephemeral: %v", e)
		}
		w.assertUntouched(t, id, out.RequestID)
		if code := w.send(r); code != 401 {
			t.Fatalf("replay: got %d", code)
		}
		if e := w.ephemeralTo("USTRANGER"); len(e) != 1 {
			t.Fatalf("the replay was processed: %v", e)
		}
	})
	t.Run("a handle that is not the approver's", func(t *testing.T) {
		// "@cfo" matches username cfo only; an id that looks like the lead's
		// handle does not match the lead's id contact.
		if code := w.click(slack.SlackUser{ID: "UOTHER", Username: "lead"}, slack.ActionApprove, id); code != 200 {
			t.Fatalf("got %d", code)
		}
		if e := w.ephemeralTo("UOTHER"); len(e) != 1 || !strings.Contains(e[0], "not an approver") {
			t.Fatalf("ephemeral: %v", e)
		}
		w.assertUntouched(t, id, out.RequestID)
	})
	t.Run("mapped approver without a custodial key gets the link", func(t *testing.T) {
		if code := w.click(slack.SlackUser{ID: "UCFO", Username: cfoName}, slack.ActionApprove, id); code != 200 {
			t.Fatalf("got %d", code)
		}
		if e := w.ephemeralTo("UCFO"); len(e) != 1 || !strings.Contains(e[0], "no custodial key") ||
			!strings.Contains(e[0], publicURL+"/dashboard/#request="+id) {
			t.Fatalf("ephemeral: %v", e)
		}
		w.assertUntouched(t, id, out.RequestID)
	})
	t.Run("the valid click still works, once; its replay is refused", func(t *testing.T) {
		w.clk.Advance(time.Second) // a fresh timestamp
		r := w.sign(clickBody(lead, slack.ActionApprove, id), w.clk.Now(), secret)
		if code := w.send(r); code != 200 {
			t.Fatalf("got %d", code)
		}
		if req := w.approval(t, id); req.Status != approval.StatusApproved {
			t.Fatalf("not approved: %s", req.Status)
		}
		before := len(w.ephemeralTo(leadID))
		if code := w.send(r); code != 401 {
			t.Fatalf("replay: got %d", code)
		}
		if after := len(w.ephemeralTo(leadID)); after != before {
			t.Fatal("the replay was processed")
		}
		// Once the window has passed, the same bytes are stale, not new.
		w.clk.Advance(6 * time.Minute)
		if code := w.send(r); code != 401 {
			t.Fatalf("late replay: got %d", code)
		}
	})
}

func TestNonCustodialClickAnswersWithLink(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "echo", `{"hi":1}`, "")
	id := out.ApprovalRequestID
	w.posted(t, id)
	for _, action := range []string{slack.ActionApprove, slack.ActionDeny} {
		if code := w.click(lead, action, id); code != 200 {
			t.Fatalf("click: %d", code)
		}
	}
	e := w.ephemeralTo(leadID)
	if len(e) != 2 {
		t.Fatalf("ephemeral: %v", e)
	}
	for _, m := range e {
		if !strings.Contains(m, "signed with your own key") || !strings.Contains(m, "<"+publicURL+"/dashboard/#request="+id+"|Review & sign in the dashboard>") {
			t.Fatalf("ephemeral: %q", m)
		}
	}
	w.assertUntouched(t, id, out.RequestID)
	// The link button's click is acknowledged and ignored.
	if code := w.click(lead, slack.ActionReview, id); code != 200 {
		t.Fatalf("review click: %d", code)
	}
	if len(w.ephemeralTo(leadID)) != 2 {
		t.Fatal("review click answered")
	}
	w.assertUntouched(t, id, out.RequestID)
}

// A resolution delivered before the request's message was posted leaves a
// tombstone: the late approval.requested posts nothing. A restart finds
// the message again through the data dir.
func TestDeliveryOrderAndRestart(t *testing.T) {
	mock, srv := newMock(t)
	dir := t.TempDir()
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals", APIURL: srv.GetAPIURL()}
	newCh := func() *slack.Channel {
		c, err := slack.New(cfg, slack.Options{PublicURL: publicURL, DataDir: dir, Getenv: env})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	req := func(id, status string, votes int) *approval.Request {
		r := &approval.Request{ApprovalID: id, Kind: approval.KindToolCall, Status: status, Quorum: 1, Summary: "s",
			SubjectID: "ed25519:" + strings.Repeat("ab", 32), ToolServer: "demo", ToolName: "echo", Votes: []approval.Vote{}}
		for range votes {
			r.Votes = append(r.Votes, approval.Vote{Approver: "ed25519:" + strings.Repeat("cd", 32), DisplayName: "Finance Lead", Decision: approval.DecisionApproved, Channel: "api"})
		}
		if status != approval.StatusPending {
			r.Resolution = &approval.Resolution{Outcome: status, ReceiptID: "rc-x"}
		}
		return r
	}
	a := newCh()
	early := "ar-00000000-0000-7000-8000-000000000001"
	if err := a.Deliver(ctx, kernel.EventApprovalResolved, req(early, approval.StatusApproved, 1)); err != nil {
		t.Fatal(err)
	}
	if err := a.Deliver(ctx, kernel.EventApprovalRequested, req(early, approval.StatusPending, 0)); err != nil {
		t.Fatal(err)
	}
	if p, u, _ := mock.snapshot(); len(p) != 0 || len(u) != 0 {
		t.Fatalf("stale message posted: %v %v", p, u)
	}
	id := "ar-00000000-0000-7000-8000-000000000002"
	if err := a.Deliver(ctx, kernel.EventApprovalRequested, req(id, approval.StatusPending, 0)); err != nil {
		t.Fatal(err)
	}
	// The same state again, or an older one, is not re-posted.
	if err := a.Deliver(ctx, kernel.EventApprovalRequested, req(id, approval.StatusPending, 0)); err != nil {
		t.Fatal(err)
	}
	b := newCh() // restart
	if err := b.Deliver(ctx, kernel.EventApprovalResolved, req(id, approval.StatusApproved, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Deliver(ctx, kernel.EventApprovalRequested, req(id, approval.StatusPending, 0)); err != nil {
		t.Fatal(err)
	}
	p, u, _ := mock.snapshot()
	if len(p) != 1 || len(u) != 1 || u[0].Get("ts") != "1700000000.000001" || u[0].Get("channel") != "C0APPROVALS" ||
		!strings.Contains(u[0].Get("blocks"), "Finance Lead *approved* via api") {
		t.Fatalf("posts %d, updates %v", len(p), u)
	}
	if err := a.Deliver(ctx, "x", &approval.Request{ApprovalID: "../../etc/passwd"}); !errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestEscalationUpdatesTier(t *testing.T) {
	mock, srv := newMock(t)
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals", APIURL: srv.GetAPIURL()}
	c, err := slack.New(cfg, slack.Options{PublicURL: publicURL, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	r := &approval.Request{ApprovalID: "ar-00000000-0000-7000-8000-000000000003", Kind: approval.KindToolCall, Status: approval.StatusPending,
		Quorum: 1, Summary: "deploy <!channel> & co", Votes: []approval.Vote{}}
	if err := c.Deliver(context.Background(), kernel.EventApprovalRequested, r); err != nil {
		t.Fatal(err)
	}
	r2 := *r
	r2.Tier = 1
	if err := c.Deliver(context.Background(), kernel.EventApprovalEscalated, &r2); err != nil {
		t.Fatal(err)
	}
	p, u, _ := mock.snapshot()
	if len(p) != 1 || len(u) != 1 || !strings.Contains(u[0].Get("blocks"), "escalated to tier 2") {
		t.Fatalf("posts %v updates %v", p, u)
	}
	// Untrusted text cannot ping the channel.
	head := blocks(t, p[0])[0]["text"].(map[string]any)["text"].(string)
	if strings.Contains(head, "<!channel>") || !strings.Contains(head, "deploy &lt;!channel&gt; &amp; co") {
		t.Fatalf("not escaped: %s", head)
	}
}

func TestNewFailsClosed(t *testing.T) {
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals"}
	for name, getenv := range map[string]func(string) string{
		"no bot token":      func(k string) string { return map[string]string{secretEnv: secret}[k] },
		"no signing secret": func(k string) string { return map[string]string{botEnv: botToken}[k] },
	} {
		if _, err := slack.New(cfg, slack.Options{Getenv: getenv}); err == nil {
			t.Errorf("%s: started", name)
		}
	}
}

func TestCustodialKeyRefused(t *testing.T) {
	lead, _ := keys.Generate(nil)
	other, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(testPolicy, lead.Public(), other.Public(), "http://127.0.0.1:1/")), "slack.toml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a file holding another key", func(t *testing.T) {
		dir := t.TempDir()
		path := slack.CustodialKeyPath(dir, lead.Public())
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := keys.WritePrivateKey(path, other); err != nil { // other's key under lead's name
			t.Fatal(err)
		}
		_, err := slack.New(*p.Channels.Slack, slack.Options{DataDir: dir, Policy: p, Getenv: env})
		if !errors.Is(err, slack.ErrCustodialKey) || !strings.Contains(err.Error(), "Finance Lead") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a file readable by others", func(t *testing.T) {
		dir := t.TempDir()
		path, err := slack.InstallCustodialKey(dir, lead)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o644)
		if _, err := slack.New(*p.Channels.Slack, slack.Options{DataDir: dir, Policy: p, Getenv: env}); !errors.Is(err, slack.ErrCustodialKey) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("installed and generated keys load", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := slack.InstallCustodialKey(dir, lead); err != nil {
			t.Fatal(err)
		}
		if _, err := slack.InstallCustodialKey(dir, lead); err == nil {
			t.Fatal("overwrote a key")
		}
		pub, path, err := slack.GenerateCustodialKey(dir)
		if err != nil || path != slack.CustodialKeyPath(dir, pub) {
			t.Fatal(err, path)
		}
		c, err := slack.New(*p.Channels.Slack, slack.Options{DataDir: dir, Policy: p, Getenv: env})
		if err != nil {
			t.Fatal(err)
		}
		// Only approvers of custodial grants are loaded: the generated key
		// belongs to nobody in the policy.
		if got := c.CustodialKeys(); len(got) != 1 || got[0] != lead.Public().String() {
			t.Fatalf("loaded %v", got)
		}
	})
}

func TestMatchSlackUser(t *testing.T) {
	u := slack.SlackUser{ID: "U024BE7LH", Username: "alice", Name: "alice"}
	for contact, want := range map[string]bool{
		"U024BE7LH": true, "U024BE7LX": false, "@alice": true, "@Alice": true, "alice": true,
		"@bob": false, "": false, "@": false, "W024BE7LH": false,
	} {
		if got := slack.MatchSlackUser(contact, u); got != want {
			t.Errorf("%q: got %v", contact, got)
		}
	}
	// A user whose handle is an id-shaped string does not match by handle.
	if slack.MatchSlackUser("U024BE7LH", slack.SlackUser{ID: "UEVIL", Username: "U024BE7LH"}) {
		t.Error("id contact matched a handle")
	}
}
