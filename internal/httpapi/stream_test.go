package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// streamEvent is one parsed Server-Sent Event.
type streamEvent struct {
	id, typ string
	data    map[string]any
}

func readStream(t *testing.T, body io.Reader) <-chan streamEvent {
	ch := make(chan streamEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		var ev streamEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.typ != "" {
					ch <- ev
				}
				ev = streamEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return ch
}

func TestStream(t *testing.T) {
	f := newApprovalsFixture(t)
	before := f.pendingRefund(t)

	if status, m := f.do(t, "GET", "/approvals/stream", "", nil); status != 401 {
		t.Fatalf("stream without a bearer: %d %v", status, m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/approvals/stream", nil)
	req.Header.Set("Authorization", "Bearer "+approvalsReader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readStream(t, resp.Body)
	next := func() streamEvent {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return streamEvent{}
	}
	// The snapshot of pending requests comes first.
	e := next()
	if e.typ != "approval.requested" || e.id != "1" || e.data["approval"].(map[string]any)["approval_id"] != before.ApprovalRequestID {
		t.Fatalf("snapshot %+v", e)
	}
	out := f.pendingRefund(t)
	e = next()
	if e.typ != "approval.requested" || e.id != "2" || e.data["approval"].(map[string]any)["approval_id"] != out.ApprovalRequestID {
		t.Fatalf("live %+v", e)
	}
	tok := f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil)
	if status, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		e = next()
		seen[e.typ] = true
	}
	if !seen["approval.resolved"] || !seen["call.completed"] {
		t.Fatalf("after respond: %v", seen)
	}
	// Escalation-free policy: a deadline resolves as expired.
	f.clock.Advance(601 * time.Second)
	if e = next(); e.typ != "approval.resolved" || e.data["approval"].(map[string]any)["status"] != "expired" {
		t.Fatalf("timeout %+v", e)
	}
	// Shutdown ends the stream.
	f.api.CloseStreams()
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CloseStreams did not end the stream")
	}
}

// openStream opens GET /approvals/stream with hdr; the caller closes the
// body (or cancels ctx) to end it.
func openStream(t *testing.T, ctx context.Context, client *http.Client, url string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/approvals/stream", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// refused checks a refused stream: status, the error envelope, Retry-After.
func refused(t *testing.T, resp *http.Response, status int) {
	t.Helper()
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != status || m["error"] != "unavailable" || m["message"] == "" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("want %d unavailable with Retry-After, got %d %v %q", status, resp.StatusCode, m, resp.Header.Get("Retry-After"))
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamCallCompletedCarriesNoOutput: approver sessions read the
// stream, and a call's output belongs to its agent and token holders.
func TestStreamCallCompletedCarriesNoOutput(t *testing.T) {
	f := newApprovalsFixture(t)
	out := f.pendingRefund(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsAdmin))
	defer resp.Body.Close()
	events := readStream(t, resp.Body)
	tok := f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil)
	if status, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			if e.typ != kernel.EventCallCompleted {
				continue
			}
			call, _ := e.data["call"].(map[string]any)
			if call["request_id"] != out.RequestID || call["status"] != kernel.StatusAllowed {
				t.Fatalf("call.completed %v", e.data)
			}
			if _, has := call["output"]; has {
				t.Fatalf("the stream carried the tool's output: %v", call)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("no call.completed")
		}
	}
}

// TestStreamReplayIsBoundedInCount: a new stream replays the oldest
// MaxStreamReplay pending requests, then says the replay was truncated,
// then goes live.
func TestStreamReplayIsBoundedInCount(t *testing.T) {
	f := newApprovalsFixture(t)
	var ids []string
	for i := 0; i < httpapi.MaxStreamReplay+3; i++ {
		ids = append(ids, f.pendingRefund(t).ApprovalRequestID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := openStream(t, ctx, http.DefaultClient, f.srv.URL, withBearer(approvalsReader))
	defer resp.Body.Close()
	events := readStream(t, resp.Body)
	next := func() streamEvent {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return streamEvent{}
	}
	for i := 0; i < httpapi.MaxStreamReplay; i++ {
		e := next()
		if e.typ != kernel.EventApprovalRequested || e.data["approval"].(map[string]any)["approval_id"] != ids[i] {
			t.Fatalf("replay %d: %+v", i, e)
		}
	}
	e := next()
	if e.typ != httpapi.EventStreamTruncated || e.data["replayed"] != float64(httpapi.MaxStreamReplay) ||
		e.data["max_replay"] != float64(httpapi.MaxStreamReplay) || e.data["message"] == "" {
		t.Fatalf("truncation notice %+v", e)
	}
	live := f.pendingRefund(t)
	if e = next(); e.typ != kernel.EventApprovalRequested || e.data["approval"].(map[string]any)["approval_id"] != live.ApprovalRequestID {
		t.Fatalf("live %+v", e)
	}
}
