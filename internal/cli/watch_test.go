package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
)

// watch runs `chio approval watch --key FILE` with stdin fed from a pipe
// and returns its output once it exits.
func (w *approvalWorld) watch(t *testing.T, env map[string]string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	if _, ok := env["CHIO_URL"]; !ok {
		env["CHIO_URL"] = w.url
	}
	type result struct {
		so, se string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		var so, se bytes.Buffer
		code := cli.Main(append([]string{"approval", "watch"}, args...),
			&cli.Env{Stdin: stdin, Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
		done <- result{so.String(), se.String(), code}
	}()
	select {
	case r := <-done:
		return r.so, r.se, r.code
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not end")
	}
	return "", "", 0
}

func TestWatchApproveWithNote(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("a\nlooks fine\n"), "--key", w.key("lead"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	for _, want := range []string{out.ApprovalRequestID, "for 450 USD: order 8834", "amount:   450 USD", "intent:   order 8834",
		"quorum:   0/1 approvals (tier 1)", "agent:    " + w.agent.Public().String(), "deadline:",
		"why:      the amount is at or above the approval threshold\n",
		"[a]pprove, [d]eny, a[m]end, [s]kip? a", "note (optional): looks fine", "approved " + out.ApprovalRequestID + ": executed (receipt rc-"} {
		if !strings.Contains(so, want) {
			t.Errorf("output lacks %q:\n%s", want, so)
		}
	}
	if !strings.Contains(se, "end of input") {
		t.Errorf("stderr: %s", se)
	}
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusApproved || len(req.Votes) != 1 {
		t.Fatalf("not approved: %+v", req)
	}
	v := req.Votes[0]
	if v.Note != "looks fine" || v.Channel != "terminal" || v.DisplayName != "Finance Lead" {
		t.Fatalf("vote: %+v", v)
	}
}

func TestWatchDenyWithReason(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	// An unknown answer is asked again; so is an empty reason: a denial
	// needs one, as `chio approval deny --reason` does.
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("x\nd\n\nduplicate refund\n"), "--key", w.key("cfo"))
	if code != 0 || !strings.Contains(so, "answer [a]pprove, [d]eny, a[m]end, [s]kip") || !strings.Contains(so, "reason (required): \na denial needs a reason") ||
		!strings.Contains(so, "denied "+out.ApprovalRequestID+": the call will not run") {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	req, _ := w.k.Approval(out.ApprovalRequestID)
	if req.Status != approval.StatusDenied || req.Resolution.Reason != "duplicate refund" || req.Votes[0].Channel != "terminal" ||
		req.Votes[0].DisplayName != "CFO" {
		t.Fatalf("not denied: %+v %+v", req, req.Resolution)
	}
	rec, _ := w.k.Call(out.RequestID)
	if rec.Reason != "duplicate refund" {
		t.Fatalf("call: %+v", rec)
	}
}

func TestWatchSkipThenApprove(t *testing.T) {
	w := newApprovalWorld(t)
	first := w.refund(t, 450)
	second := w.refund(t, 300)
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("s\na\n\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "skipped "+first.ApprovalRequestID) || !strings.Contains(so, "approved "+second.ApprovalRequestID) {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	if req, _ := w.k.Approval(first.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("skipped request changed: %+v", req)
	}
	req, _ := w.k.Approval(second.ApprovalRequestID)
	if req.Status != approval.StatusApproved || req.Votes[0].Note != "" || req.Votes[0].Channel != "terminal" {
		t.Fatalf("second: %+v", req)
	}
	// Skipping is remembered: the skipped request is not asked again while
	// the watch runs (the input ended after the second request's note).
	if strings.Count(so, "── "+first.ApprovalRequestID) != 1 {
		t.Fatalf("asked twice:\n%s", so)
	}
}

func TestWatchAmend(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	stdin := "m\n[1]\n{\"customer_id\":\"cust-1\",\"amount\":200,\"currency\":\"USD\"}\npartial refund\n"
	so, se, code := w.watch(t, adminEnv(), strings.NewReader(stdin), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "not a JSON object") || !strings.Contains(so, "approved "+out.ApprovalRequestID) {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	rec, _ := w.k.Call(out.RequestID)
	if !strings.Contains(string(rec.Output), `"amount":200`) {
		t.Fatalf("not amended: %s", rec.Output)
	}
	req, _ := w.k.Approval(out.ApprovalRequestID)
	if req.Votes[0].Note != "partial refund" {
		t.Fatalf("note: %+v", req.Votes[0])
	}
}

// A request the key may not decide is never shown; end of input stops the
// watch even mid-prompt, changing nothing.
func TestWatchOnlyOwnRequestsAndEOF(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	// The stranger's watch: its input ends at once; nothing is asked.
	so, se, code := w.watch(t, adminEnv(), strings.NewReader(""), "--key", w.key("stranger"))
	if code != 0 || strings.Contains(so, out.ApprovalRequestID) {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	// The lead's watch: input ends at the note prompt.
	so, se, code = w.watch(t, adminEnv(), strings.NewReader("a\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "note (optional):") || strings.Contains(so, "approved ") {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	if req, _ := w.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("changed: %+v", req)
	}
}

// The stream is reconnected after server errors; a refused bearer is fatal.
func TestWatchReconnectsAndAuth(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	target, _ := url.Parse(w.url)
	var streams atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/approvals/stream" && streams.Add(1) <= 2 {
			http.Error(rw, `{"error":"unavailable","message":"try later"}`, http.StatusServiceUnavailable)
			return
		}
		proxyTo(rw, r, target)
	}))
	defer flaky.Close()
	env := adminEnv()
	env["CHIO_URL"] = flaky.URL
	so, se, code := w.watch(t, env, strings.NewReader("a\nok\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "approved "+out.ApprovalRequestID) || strings.Count(se, "reconnecting") < 2 {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	_, se, code = w.watch(t, map[string]string{"CHIO_READ_TOKEN": "wrong"}, strings.NewReader("a\n"), "--key", w.key("lead"))
	if code != 1 || !strings.Contains(se, "unauthorized") {
		t.Fatalf("bad bearer: %d %s", code, se)
	}
	_, se, code = w.watch(t, map[string]string{}, strings.NewReader(""), "--key", w.key("lead"))
	if code != 2 || !strings.Contains(se, "CHIO_READ_TOKEN") {
		t.Fatalf("no bearer: %d %s", code, se)
	}
	_, _, code = w.watch(t, adminEnv(), strings.NewReader(""))
	if code != 2 {
		t.Fatalf("no key: %d", code)
	}
}

// proxyTo forwards one request to target, streaming the answer.
func proxyTo(rw http.ResponseWriter, r *http.Request, target *url.URL) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			rw.Write(buf[:n])
			if f, ok := rw.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// A confirm request is confirmed or declined; amend is not offered (the
// kernel refuses amendments of anything but a tool call).
func TestWatchConfirm(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "confirm", `{"prompt":"Ship the release?","details":{"version":"2.4"}}`, "")
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("m\nc\nship it\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "[c]onfirm, [d]ecline, [s]kip? m\nanswer [c]onfirm, [d]ecline, [s]kip") ||
		strings.Contains(so, "a[m]end") || !strings.Contains(so, "approved "+out.ApprovalRequestID+": executed") {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
	req, _ := w.k.Approval(out.ApprovalRequestID)
	if req.Status != approval.StatusApproved || req.Votes[0].Note != "ship it" {
		t.Fatalf("%+v", req)
	}
	// Declining needs a reason too.
	out = w.submit(t, "confirm", `{"prompt":"Delete the old bucket?"}`, "")
	so, se, code = w.watch(t, adminEnv(), strings.NewReader("d\n\nnot yet\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "a denial needs a reason") || !strings.Contains(so, "denied "+out.ApprovalRequestID) {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
}

// A tool call whose grant does not show its arguments cannot be amended:
// the approver would edit what they cannot see.
func TestWatchNoAmendWithoutArguments(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "") // quorum 2, arguments not exposed
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("m\ns\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "[a]pprove, [d]eny, [s]kip? m\nanswer [a]pprove, [d]eny, [s]kip") || !strings.Contains(so, "skipped "+out.ApprovalRequestID) {
		t.Fatalf("exit %d\n%s\n%s", code, so, se)
	}
}
