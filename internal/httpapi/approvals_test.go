package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const approvalsPolicy = `
# Some tests park more than the default per-agent cap (stream replay bounds).
[kernel]
max_pending_approvals_per_agent = 1000

[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "echo"
[[servers.tools]]
name = "refund"
amount = "/amount"
currency = "/currency"
action = "charge"
[[servers.tools]]
name = "deploy"

[[grants]]
id = "echo"
server = "pay"
tool = "echo"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Alice"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Bob"

[[grants]]
id = "deploys"
server = "pay"
tool = "deploy"
[grants.constraints]
require_approval_always = true
[grants.approval]
quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Alice"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Bob"
`

var (
	keyAlice   = keys.FromSeed([]byte("alice-alice-alice-alice-alice-32"))
	keyBob     = keys.FromSeed([]byte("bob-bob-bob-bob-bob-bob-bob-bob-"))
	keyMallory = keys.FromSeed([]byte("mallory-mallory-mallory-mallory-"))
	keyAgent   = keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	keyOther   = keys.FromSeed([]byte("other-other-other-other-other-32"))
)

const (
	approvalsAdmin  = "admin-secret"
	approvalsReader = "reader-secret"
)

// argsDispatcher answers every call with its arguments, so an amendment
// is visible in the output.
type argsDispatcher struct{ n atomic.Int64 }

func (d *argsDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.n.Add(1)
	return kernel.DispatchResult{Output: json.RawMessage(`{"done":` + string(r.Arguments) + `}`)}, nil
}

type approvalsFixture struct {
	k     *kernel.Kernel
	clock *clock.Fake
	srv   *httptest.Server
	api   *httpapi.Server
	caps  map[string][]byte // agent public key → capability
	w     *testkit.World
}

func newApprovalsFixture(t *testing.T) *approvalsFixture {
	return newApprovalsFixtureOn(t, nil)
}

// newApprovalsFixtureOn is newApprovalsFixture with the store wrapped
// (nil: not wrapped).
func newApprovalsFixtureOn(t *testing.T, wrap func(kernel.Store) kernel.Store) *approvalsFixture {
	t.Helper()
	f := &approvalsFixture{clock: clock.NewFake(time.Unix(1_800_000_000, 0)), caps: map[string][]byte{}}
	f.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public()),
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Clock: f.clock, Dispatcher: &argsDispatcher{},
		Serve: true, AdminToken: approvalsAdmin, ReadToken: approvalsReader, WrapStore: wrap})
	f.k, f.api, f.srv = f.w.Kernel, f.w.API, f.w.Srv
	for _, a := range []keys.PrivateKey{keyAgent, keyOther} {
		raw, _, err := f.k.IssueCapability(a.Public(), []string{"echo", "refunds", "deploys"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		f.caps[a.Public().String()] = raw
	}
	return f
}

// submit makes a call by agent a directly through the kernel.
func (f *approvalsFixture) submit(t *testing.T, a keys.PrivateKey, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	return f.w.SubmitCall(t, f.w.CallAs(t, a, f.caps[a.Public().String()], "pay", tool, args, intent))
}

// pendingRefund parks a refund for a human and returns its outcome.
func (f *approvalsFixture) pendingRefund(t *testing.T) *kernel.Outcome {
	t.Helper()
	out := f.submit(t, keyAgent, "refund", `{"amount":450,"currency":"USD"}`, `{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending, got %+v", out)
	}
	return out
}

// token signs a decision on approvalID by k; mutate edits it before signing.
func (f *approvalsFixture) token(t *testing.T, k keys.PrivateKey, approvalID, decision string, mutate func(*approval.Token)) json.RawMessage {
	t.Helper()
	return f.w.Token(t, approvalID, k, decision, mutate)
}

// do sends a request; hdr may carry "Authorization" or "Chio-Proof".
func (f *approvalsFixture) do(t *testing.T, method, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, m
}

func withBearer(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

func respondBody(tok json.RawMessage, extra string) string {
	return `{"token":` + string(tok) + extra + `}`
}

func TestRespond(t *testing.T) {
	f := newApprovalsFixture(t)
	cases := []struct {
		name   string
		body   func(id string) string
		hdr    map[string]string
		status int
		code   string
	}{
		{"approve", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"outcome":"approved","channel":"cli"`)
		}, nil, 200, ""},
		{"outcome approve is normalized", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"outcome":"approve"`)
		}, nil, 200, ""},
		{"deny with the signed note as reason", func(id string) string {
			tok := f.token(t, keyBob, id, "denied", func(k *approval.Token) { k.Note = "too large" })
			return respondBody(tok, `,"outcome":"deny","reason":"too large"`)
		}, nil, 200, ""},
		{"untrusted approver", func(id string) string { return respondBody(f.token(t, keyMallory, id, "approved", nil), "") }, nil, 403, "approval_rejected"},
		{"the agent approving itself", func(id string) string { return respondBody(f.token(t, keyAgent, id, "approved", nil), "") }, nil, 403, "approval_rejected"},
		{"outcome disagrees with the token", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"outcome":"denied"`)
		}, nil, 403, "approval_rejected"},
		{"token for another request", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", func(k *approval.Token) { k.RequestID = "ar-other" }), "")
		}, nil, 403, "approval_rejected"},
		{"tampered after signing", func(id string) string {
			tok := f.token(t, keyAlice, id, "denied", nil)
			return respondBody(json.RawMessage(strings.Replace(string(tok), `"denied"`, `"approved"`, 1)), "")
		}, nil, 403, "approval_rejected"},
		{"token is not an object", func(id string) string { return `{"token":"at-123"}` }, nil, 403, "approval_rejected"},
		{"no token, admin bearer is not enough", func(id string) string { return `{"outcome":"approved"}` }, withBearer(approvalsAdmin), 401, "unauthorized"},
		{"unknown outcome", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"outcome":"maybe"`)
		}, nil, 400, "bad_request"},
		{"reason too long", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "denied", nil), `,"reason":"`+strings.Repeat("x", approval.MaxNoteLen+1)+`"`)
		}, nil, 400, "bad_request"},
		{"unsigned reason", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "denied", nil), `,"reason":"words in my mouth"`)
		}, nil, 400, "bad_request"},
		{"reserved channel", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"channel":"timeout"`)
		}, nil, 400, "bad_request"},
		{"bad channel", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"channel":"Slack Bot"`)
		}, nil, 400, "bad_request"},
		{"unknown field", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"bogus":1`)
		}, nil, 400, "bad_request"},
		{"duplicate field", func(id string) string {
			return respondBody(f.token(t, keyAlice, id, "approved", nil), `,"outcome":"approved","outcome":"denied"`)
		}, nil, 400, "bad_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := f.pendingRefund(t)
			status, body := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", c.body(out.ApprovalRequestID), c.hdr)
			if status != c.status || (c.code != "" && body["error"] != c.code) {
				t.Fatalf("got %d %v, want %d %s", status, body, c.status, c.code)
			}
			if status == 200 && (body["approval_id"] != out.ApprovalRequestID || body["receipt_id"] == "" || body["resolved_at"] == nil) {
				t.Fatalf("answer %v", body)
			}
		})
	}

	t.Run("replay, then another approver after resolution", func(t *testing.T) {
		out := f.pendingRefund(t)
		path := "/approvals/" + out.ApprovalRequestID + "/respond"
		body := respondBody(f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil), "")
		if status, m := f.do(t, "POST", path, body, nil); status != 200 || m["outcome"] != "approved" {
			t.Fatalf("first: %d %v", status, m)
		}
		if status, m := f.do(t, "POST", path, body, nil); status != 409 || m["error"] != "replay_detected" {
			t.Fatalf("replay: %d %v", status, m)
		}
		late := respondBody(f.token(t, keyBob, out.ApprovalRequestID, "denied", nil), "")
		if status, m := f.do(t, "POST", path, late, nil); status != 409 || m["error"] != "conflict" {
			t.Fatalf("late vote: %d %v", status, m)
		}
	})
	t.Run("unknown approval", func(t *testing.T) {
		out := f.pendingRefund(t)
		body := respondBody(f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil), "")
		if status, m := f.do(t, "POST", "/approvals/ar-nope/respond", body, nil); status != 404 || m["error"] != "not_found" {
			t.Fatalf("%d %v", status, m)
		}
	})
	t.Run("quorum progress, then a second key twice", func(t *testing.T) {
		out := f.submit(t, keyAgent, "deploy", `{"v":1}`, "")
		id := out.ApprovalRequestID
		path := "/approvals/" + id + "/respond"
		status, m := f.do(t, "POST", path, respondBody(f.token(t, keyAlice, id, "approved", nil), ""), nil)
		if status != 200 || m["outcome"] != "pending" || m["approvals"] != 1.0 || m["quorum"] != 2.0 {
			t.Fatalf("first vote: %d %v", status, m)
		}
		status, m = f.do(t, "POST", path, respondBody(f.token(t, keyAlice, id, "approved", nil), ""), nil)
		if status != 409 || m["error"] != "replay_detected" {
			t.Fatalf("same key again: %d %v", status, m)
		}
		status, m = f.do(t, "POST", path, respondBody(f.token(t, keyBob, id, "approved", nil), ""), nil)
		if status != 200 || m["outcome"] != "approved" {
			t.Fatalf("quorum: %d %v", status, m)
		}
	})
}

func TestReadApprovals(t *testing.T) {
	f := newApprovalsFixture(t)
	first := f.pendingRefund(t)
	f.clock.Advance(time.Second)
	second := f.submit(t, keyOther, "refund", `{"amount":300,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":300,"currency":"USD"}}`)

	status, m := f.do(t, "GET", "/approvals/pending", "", withBearer(approvalsReader))
	list, _ := m["approvals"].([]any)
	if status != 200 || m["count"] != 2.0 || len(list) != 2 || list[0].(map[string]any)["approval_id"] != first.ApprovalRequestID {
		t.Fatalf("pending: %d %v", status, m)
	}
	status, m = f.do(t, "GET", "/approvals/pending?subject_id="+keyOther.Public().String(), "", withBearer(approvalsAdmin))
	if status != 200 || m["count"] != 1.0 || m["approvals"].([]any)[0].(map[string]any)["approval_id"] != second.ApprovalRequestID {
		t.Fatalf("filtered: %d %v", status, m)
	}
	status, m = f.do(t, "GET", "/approvals/pending?tool_name=nothing", "", withBearer(approvalsReader))
	if status != 200 || m["count"] != 0.0 || m["approvals"] == nil {
		t.Fatalf("empty list must be []: %d %v", status, m)
	}

	proof := func(k keys.PrivateKey, id string, at time.Time) map[string]string {
		return map[string]string{"Chio-Proof": httpapi.SignStatusProof(k, id, at)}
	}
	now := f.clock.Now()
	id := first.ApprovalRequestID
	cases := []struct {
		name, path string
		hdr        map[string]string
		status     int
		code       string
	}{
		{"pending needs a bearer", "/approvals/pending", nil, 401, "unauthorized"},
		{"pending with a wrong bearer", "/approvals/pending", withBearer("nope"), 401, "unauthorized"},
		{"bad limit", "/approvals/pending?limit=0", withBearer(approvalsReader), 400, "bad_request"},
		{"huge limit", "/approvals/pending?limit=100000", withBearer(approvalsReader), 400, "bad_request"},
		{"one request, reader", "/approvals/" + id, withBearer(approvalsReader), 200, ""},
		{"one request, its own agent", "/approvals/" + id, proof(keyAgent, id, now), 200, ""},
		{"one request, another agent", "/approvals/" + id, proof(keyOther, id, now), 401, "unauthorized"},
		{"one request, proof for another id", "/approvals/" + id, proof(keyAgent, second.ApprovalRequestID, now), 401, "unauthorized"},
		{"one request, no auth", "/approvals/" + id, nil, 401, "unauthorized"},
		{"unknown request, reader", "/approvals/ar-nope", withBearer(approvalsReader), 404, "not_found"},
		{"unknown request, proof answers like a bad proof", "/approvals/ar-nope", proof(keyAgent, "ar-nope", now), 401, "unauthorized"},
		{"batches need a bearer", "/approvals/batch", nil, 401, "unauthorized"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := f.do(t, "GET", c.path, "", c.hdr)
			if status != c.status || (c.code != "" && m["error"] != c.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, c.status, c.code)
			}
			if status == 200 && (m["status"] != "pending" || m["request"].(map[string]any)["approval_id"] != id) {
				t.Fatalf("view %v", m)
			}
		})
	}
}

func TestCallStatus(t *testing.T) {
	f := newApprovalsFixture(t)
	out := f.pendingRefund(t)
	rid := out.RequestID
	now := f.clock.Now()
	proof := func(k keys.PrivateKey, id string, at time.Time) map[string]string {
		return map[string]string{"Chio-Proof": httpapi.SignStatusProof(k, id, at)}
	}
	cases := []struct {
		name, path string
		hdr        map[string]string
		status     int
		code       string
	}{
		{"no auth", "/v1/calls/" + rid, nil, 401, "unauthorized"},
		{"reader", "/v1/calls/" + rid, withBearer(approvalsReader), 200, ""},
		{"admin", "/v1/calls/" + rid, withBearer(approvalsAdmin), 200, ""},
		{"own agent", "/v1/calls/" + rid, proof(keyAgent, rid, now), 200, ""},
		{"own agent, 60 s skew", "/v1/calls/" + rid, proof(keyAgent, rid, now.Add(-60*time.Second)), 200, ""},
		{"own agent, stale", "/v1/calls/" + rid, proof(keyAgent, rid, now.Add(-61*time.Second)), 401, "unauthorized"},
		{"own agent, future", "/v1/calls/" + rid, proof(keyAgent, rid, now.Add(61*time.Second)), 401, "unauthorized"},
		{"another agent", "/v1/calls/" + rid, proof(keyOther, rid, now), 401, "unauthorized"},
		{"proof for another id", "/v1/calls/" + rid, proof(keyAgent, "req-other", now), 401, "unauthorized"},
		{"garbage proof", "/v1/calls/" + rid, map[string]string{"Chio-Proof": "hello"}, 401, "unauthorized"},
		{"unknown id, reader", "/v1/calls/req-nope", withBearer(approvalsReader), 404, "not_found"},
		{"unknown id, proof", "/v1/calls/req-nope", proof(keyAgent, "req-nope", now), 401, "unauthorized"},
		{"bad wait", "/v1/calls/" + rid + "?wait=soon", withBearer(approvalsReader), 400, "bad_request"},
		{"wait too long", "/v1/calls/" + rid + "?wait=61s", withBearer(approvalsReader), 400, "bad_request"},
		{"negative wait", "/v1/calls/" + rid + "?wait=-1s", withBearer(approvalsReader), 400, "bad_request"},
		// Whole seconds past what a time.Duration holds must not wrap
		// around into an accepted short wait.
		{"wait of wrapping seconds", "/v1/calls/" + rid + "?wait=18446744074", withBearer(approvalsReader), 400, "bad_request"},
		{"bad wait needs auth first", "/v1/calls/" + rid + "?wait=soon", nil, 401, "unauthorized"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := f.do(t, "GET", c.path, "", c.hdr)
			if status != c.status || (c.code != "" && m["error"] != c.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, c.status, c.code)
			}
			if status == 200 && (m["status"] != "pending_approval" || m["approval_request_id"] != out.ApprovalRequestID ||
				m["deadline"] == nil || m["approval"].(map[string]any)["status"] != "pending") {
				t.Fatalf("pending view %v", m)
			}
		})
	}

	t.Run("approved with a note and an amendment", func(t *testing.T) {
		out := f.pendingRefund(t)
		tok := f.token(t, keyAlice, out.ApprovalRequestID, "approved", func(k *approval.Token) {
			k.Note = "ok, halved"
			k.AmendedArguments = json.RawMessage(`{"amount":225,"currency":"USD"}`)
		})
		if status, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
			t.Fatalf("respond: %d %v", status, m)
		}
		status, m := f.do(t, "GET", "/v1/calls/"+out.RequestID, "", proof(keyAgent, out.RequestID, f.clock.Now()))
		ap, _ := m["approval"].(map[string]any)
		if status != 200 || m["status"] != "allowed" || fmt.Sprint(m["output"]) != "map[done:map[amount:225 currency:USD]]" || ap == nil ||
			ap["note"] != "ok, halved" || ap["amended"] != true || ap["approver"] != keyAlice.Public().String() ||
			ap["approver_display_name"] != "Alice" || fmt.Sprint(ap["amended_arguments"]) != "map[amount:225 currency:USD]" {
			t.Fatalf("%d %v", status, m)
		}
	})
	t.Run("a call without approval has no approval section", func(t *testing.T) {
		out := f.submit(t, keyAgent, "echo", `{"x":1}`, "")
		status, m := f.do(t, "GET", "/v1/calls/"+out.RequestID+"?wait=30s", "", withBearer(approvalsReader))
		if status != 200 || m["status"] != "allowed" || m["approval"] != nil {
			t.Fatalf("%d %v", status, m)
		}
	})
}

func TestLongPoll(t *testing.T) {
	f := newApprovalsFixture(t)
	poll := func(rid, wait string) chan map[string]any {
		ch := make(chan map[string]any, 1)
		go func() {
			req, _ := http.NewRequest("GET", f.srv.URL+"/v1/calls/"+rid+"?wait="+wait, nil)
			req.Header.Set("Authorization", "Bearer "+approvalsReader)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ch <- map[string]any{"err": err.Error()}
				return
			}
			defer resp.Body.Close()
			var m map[string]any
			json.NewDecoder(resp.Body).Decode(&m)
			ch <- m
		}()
		return ch
	}
	for _, decision := range []string{"approved", "denied"} {
		t.Run(decision, func(t *testing.T) {
			out := f.pendingRefund(t)
			ch := poll(out.RequestID, "30s")
			select {
			case m := <-ch:
				t.Fatalf("returned before a decision: %v", m)
			case <-time.After(100 * time.Millisecond):
			}
			tok := f.token(t, keyBob, out.ApprovalRequestID, decision, func(k *approval.Token) { k.Note = "because" })
			if status, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
				t.Fatalf("respond: %d %v", status, m)
			}
			select {
			case m := <-ch:
				want := map[string]string{"approved": "allowed", "denied": "denied"}[decision]
				if m["status"] != want || m["approval"].(map[string]any)["note"] != "because" {
					t.Fatalf("long-poll answer %v", m)
				}
				if decision == "denied" && (m["guard"] != "human-approval" || m["reason"] != "because") {
					t.Fatalf("deny answer %v", m)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("long-poll did not return after the decision")
			}
		})
	}
	t.Run("times out with the current state", func(t *testing.T) {
		out := f.pendingRefund(t)
		start := time.Now()
		m := <-poll(out.RequestID, "300ms")
		if m["status"] != "pending_approval" || time.Since(start) < 300*time.Millisecond {
			t.Fatalf("%v after %s", m, time.Since(start))
		}
	})
	t.Run("deadline passes while waiting", func(t *testing.T) {
		out := f.pendingRefund(t)
		ch := poll(out.RequestID, "30s")
		time.Sleep(50 * time.Millisecond)
		f.clock.Advance(601 * time.Second)
		select {
		case m := <-ch:
			if m["status"] != "denied" || m["guard"] != "approval-timeout" || m["approval"].(map[string]any)["status"] != "expired" {
				t.Fatalf("%v", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("long-poll did not see the timeout")
		}
	})
	t.Run("shutdown ends waiters", func(t *testing.T) {
		out := f.pendingRefund(t)
		ch := poll(out.RequestID, "30s")
		time.Sleep(50 * time.Millisecond)
		f.api.CloseStreams()
		select {
		case m := <-ch:
			if m["status"] != "pending_approval" {
				t.Fatalf("%v", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("CloseStreams did not end the long-poll")
		}
	})
}

func TestBatchRespond(t *testing.T) {
	f := newApprovalsFixture(t)
	a, b := f.pendingRefund(t), f.pendingRefund(t)
	good := f.token(t, keyAlice, a.ApprovalRequestID, "approved", nil)
	untrusted := f.token(t, keyMallory, b.ApprovalRequestID, "approved", nil)
	body := fmt.Sprintf(`{"channel":"dashboard","items":[{"approval_id":%q,"token":%s,"outcome":"approve"},{"approval_id":%q,"token":%s},{"approval_id":%q,"token":%s}]}`,
		a.ApprovalRequestID, good, b.ApprovalRequestID, untrusted, a.ApprovalRequestID, good)
	status, m := f.do(t, "POST", "/approvals/batch/respond", body, nil)
	if status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	res := m["results"].([]any)
	sum := m["summary"].(map[string]any)
	r0, r1, r2 := res[0].(map[string]any), res[1].(map[string]any), res[2].(map[string]any)
	if sum["ok"] != 1.0 || sum["failed"] != 2.0 || r0["ok"] != true || r0["outcome"] != "approved" || r0["receipt_id"] == nil ||
		r1["ok"] != false || r1["error"] != "approval_rejected" || r2["error"] != "replay_detected" {
		t.Fatalf("%v", m)
	}
	if out, _ := f.k.Call(b.RequestID); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("a failed item changed its call: %+v", out)
	}
	for name, body := range map[string]string{
		"empty":    `{"items":[]}`,
		"too many": `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"approval_id":"ar-x","token":{}},`, approval.MaxBatchRespond+1), ",") + `]}`,
		"strict":   `{"items":[],"items":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if status, m := f.do(t, "POST", "/approvals/batch/respond", body, nil); status != 400 || m["error"] != "bad_request" {
				t.Fatalf("%d %v", status, m)
			}
		})
	}
}

func TestStandingApprovals(t *testing.T) {
	f := newApprovalsFixture(t)
	mk := func(k keys.PrivateKey, mutate func(*approval.BatchToken)) json.RawMessage {
		calls := int64(1)
		b := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: k.Public().String(),
			Audience: f.k.PublicKey().String(), ServerPattern: "pay", ToolPattern: "ref*", MaxCalls: &calls, NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
		if mutate != nil {
			mutate(b)
		}
		raw, err := b.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	good := mk(keyAlice, nil)
	cases := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"created by the approver's signature alone", `{"token":` + string(good) + `}`, 201, ""},
		{"the same batch twice", `{"token":` + string(good) + `}`, 409, "conflict"},
		{"untrusted approver", `{"token":` + string(mk(keyMallory, nil)) + `}`, 403, "approval_rejected"},
		{"window over", `{"token":` + string(mk(keyAlice, func(b *approval.BatchToken) { b.NotAfter = b.NotBefore })) + `}`, 403, "approval_rejected"},
		{"malformed", `{"token":{"schema":"chio.batch-approval.v1"}}`, 400, "bad_request"},
		{"no token", `{}`, 401, "unauthorized"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := f.do(t, "POST", "/approvals/batch", c.body, nil)
			if status != c.status || (c.code != "" && m["error"] != c.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, c.status, c.code)
			}
			if status == 201 && (m["id"] == nil || m["token"] == nil) {
				t.Fatalf("%v", m)
			}
		})
	}
	var head struct{ ID string }
	json.Unmarshal(good, &head)

	// The standing approval covers one refund, then it is used up.
	if out := f.submit(t, keyAgent, "refund", `{"amount":450,"currency":"USD"}`, `{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`); out.Status != kernel.StatusAllowed {
		t.Fatalf("batch did not cover: %+v", out)
	}
	status, m := f.do(t, "GET", "/approvals/batch", "", withBearer(approvalsReader))
	list := m["batches"].([]any)
	if status != 200 || m["count"] != 1.0 || list[0].(map[string]any)["usage"].(map[string]any)["calls"] != 1.0 {
		t.Fatalf("list: %d %v", status, m)
	}
	// The listed token is the stored, signed bytes.
	raw, _ := json.Marshal(list[0].(map[string]any)["token"])
	if _, err := approval.VerifyBatch(raw, f.k.PublicKey().String(), func(string) bool { return true }, f.clock.Now()); err != nil {
		t.Fatalf("listed token does not verify: %v", err)
	}
	for _, c := range []struct {
		name, path string
		hdr        map[string]string
		status     int
	}{
		{"revoke needs admin, not reader", "/approvals/batch/" + head.ID, withBearer(approvalsReader), 401},
		{"revoke needs a bearer", "/approvals/batch/" + head.ID, nil, 401},
		{"revoke unknown", "/approvals/batch/ba-nope", withBearer(approvalsAdmin), 404},
		{"revoke", "/approvals/batch/" + head.ID, withBearer(approvalsAdmin), 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, m := f.do(t, "DELETE", c.path, "", c.hdr); status != c.status {
				t.Fatalf("got %d %v, want %d", status, m, c.status)
			}
		})
	}
	_, m = f.do(t, "GET", "/approvals/batch", "", withBearer(approvalsAdmin))
	if m["batches"].([]any)[0].(map[string]any)["revoked"] != true {
		t.Fatalf("%v", m)
	}
}
