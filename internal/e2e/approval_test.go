package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

const (
	approvalRefundArgs   = `{"customer_id":"cust-9012","amount":450,"currency":"USD"}`
	approvalRefundIntent = `{"purpose":"Customer requested refund for order #8834","max_amount":{"units":450,"currency":"USD"}}`
)

// bgProcess is a chio process left running (chio await).
type bgProcess struct {
	cmd    *exec.Cmd
	so, se bytes.Buffer
	done   chan struct{}
	code   int
}

// startBackground runs the chio binary in the background with only env (plus
// CHIO_URL): no admin token unless env carries one.
func (d *daemon) startBackground(t testing.TB, dir string, env []string, args ...string) *bgProcess {
	t.Helper()
	b := &bgProcess{done: make(chan struct{})}
	b.cmd = exec.Command(filepath.Join(binDir, "chio"), args...)
	b.cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHIO_") {
			b.cmd.Env = append(b.cmd.Env, kv)
		}
	}
	b.cmd.Env = append(append(b.cmd.Env, "CHIO_URL="+d.url), env...)
	b.cmd.Stdout, b.cmd.Stderr = &b.so, &b.se
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		} else if err != nil {
			b.code = -1
		}
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

func (b *bgProcess) wait(t testing.TB, within time.Duration) (string, string, int) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(within):
		t.Fatalf("%v did not exit within %s", b.cmd.Args, within)
	}
	return strings.TrimSpace(b.so.String()), b.se.String(), b.code
}

// verifiedReceipts lists every receipt through the CLI and verifies each signature.
func (d *daemon) verifiedReceipts(t *testing.T, dir string) []*receipt.Receipt {
	t.Helper()
	var health struct {
		KernelKey string `json:"kernel_key"`
	}
	d.do(t, "GET", "/healthz", nil, &health)
	kk, err := keys.ParsePublicKey(health.KernelKey)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := d.chio(t, dir, "receipt", "list", "--output", "jsonl", "--limit", "1000")
	if code != 0 {
		t.Fatalf("receipt list: %d %s", code, errOut)
	}
	var all []*receipt.Receipt
	for _, l := range strings.Split(out, "\n") {
		r, err := receipt.Verify([]byte(l), kk)
		if err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		all = append(all, r)
	}
	return all
}

// approvalChain returns the incomplete receipt of approval id and the receipt that
// followed it.
func approvalChain(t *testing.T, all []*receipt.Receipt, id string) (incomplete, final *receipt.Receipt) {
	t.Helper()
	for _, r := range all {
		if r.Metadata["approval_request_id"] != id {
			continue
		}
		if r.Decision.Verdict == receipt.Incomplete {
			incomplete = r
		} else {
			final = r
		}
	}
	if incomplete == nil || final == nil {
		t.Fatalf("no complete receipt chain for %s", id)
	}
	if final.Metadata["previous_receipt_id"] != incomplete.ID || final.RequestID != incomplete.RequestID {
		t.Fatalf("chain not linked: %+v -> %+v", incomplete, final)
	}
	return incomplete, final
}

// TestApprovalFlow is the human-in-the-loop path with the real binaries:
// call, list, await in the background, approve with the demo key, then the
// receipts; the deny path; and a replayed and an untrusted token over HTTP.
func TestApprovalFlow(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	d := startDaemon(t, filepath.Join(root, "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	leadKey := filepath.Join(root, "examples", "keys", "finance-lead.pem")
	cfoKey := filepath.Join(root, "examples", "keys", "cfo.pem")
	lead, err := keys.LoadPrivateKey(leadKey)
	if err != nil {
		t.Fatal(err)
	}

	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatal("keygen")
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "refunds", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %s", errOut)
	}
	call := []string{"call", "demo", "issue_refund", "--args", approvalRefundArgs, "--intent", approvalRefundIntent, "--capability", "agent.cap", "--key", "agent.pem"}
	agentEnv := []string{"CHIO_KEY=" + filepath.Join(work, "agent.pem")} // the agent has its key, no bearer

	t.Run("approve", func(t *testing.T) {
		id, errOut, code := d.chio(t, work, call...)
		if code != 3 || !strings.HasPrefix(id, "ar-") {
			t.Fatalf("call: exit %d %q %s", code, id, errOut)
		}
		out, _, code := d.chio(t, work, "approval", "list")
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "demo/issue_refund") || !strings.Contains(out, "for 450 USD") {
			t.Fatalf("approval list: %d\n%s", code, out)
		}
		await := d.startBackground(t, work, agentEnv, "await", id, "--timeout", "60s")
		out, errOut, code = d.chio(t, work, "approval", "approve", id, "--key", leadKey, "--note", "ok, customer verified")
		if code != 0 || !strings.Contains(out, "approved "+id) {
			t.Fatalf("approve: %d %s %s", code, out, errOut)
		}
		out, errOut, code = await.wait(t, 30*time.Second)
		if code != 0 || !strings.Contains(out, `"refund_id":"rf-`) || !strings.Contains(out, `"status":"issued"`) ||
			!strings.Contains(errOut, "note: ok, customer verified") {
			t.Fatalf("await: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}

		incomplete, allow := approvalChain(t, d.verifiedReceipts(t, work), id)
		if allow.Decision.Verdict != receipt.Allow {
			t.Fatalf("final receipt %+v", allow)
		}
		m := allow.Metadata
		tokID, _ := m["approval_token_id"].(string)
		if !strings.HasPrefix(tokID, "at-") || m["approver"] != lead.Public().String() || m["approver_display_name"] != "Finance Lead" ||
			m["channel"] != "cli" || m["approval_latency_ms"] == nil || m["note"] != "ok, customer verified" {
			t.Fatalf("allow metadata %v", m)
		}
		if incomplete.Metadata["summary"] == nil || incomplete.Metadata["deadline"] == nil {
			t.Fatalf("incomplete metadata %v", incomplete.Metadata)
		}
		out, _, code = d.chio(t, work, "receipt", "list", "--meta", "approver_display_name=Finance Lead", "--decision", "allow", "--output", "json")
		var arr []json.RawMessage
		if code != 0 || json.Unmarshal([]byte(out), &arr) != nil || len(arr) != 1 {
			t.Fatalf("audit query: %d %s", code, out)
		}
	})

	t.Run("deny", func(t *testing.T) {
		id, _, code := d.chio(t, work, call...)
		if code != 3 {
			t.Fatalf("call: exit %d", code)
		}
		await := d.startBackground(t, work, agentEnv, "await", id, "--timeout", "60s")
		if out, errOut, code := d.chio(t, work, "approval", "deny", id, "--key", cfoKey, "--reason", "refund already issued"); code != 0 {
			t.Fatalf("deny: %d %s %s", code, out, errOut)
		}
		out, errOut, code := await.wait(t, 30*time.Second)
		if code != 4 || !strings.Contains(out, "human-approval") || !strings.Contains(out, "refund already issued") {
			t.Fatalf("await: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		_, deny := approvalChain(t, d.verifiedReceipts(t, work), id)
		if deny.Decision.Verdict != receipt.Deny || deny.Decision.Guard != "human-approval" || deny.Decision.Reason != "refund already issued" ||
			deny.Metadata["approver_display_name"] != "CFO" || deny.Metadata["channel"] != "cli" {
			t.Fatalf("deny receipt %+v", deny)
		}
	})

	t.Run("replayed and untrusted tokens over HTTP", func(t *testing.T) {
		id, _, code := d.chio(t, work, call...)
		if code != 3 {
			t.Fatalf("call: exit %d", code)
		}
		var v struct {
			Request approval.Request `json:"request"`
		}
		if code := d.do(t, "GET", "/approvals/"+id, nil, &v); code != 200 {
			t.Fatalf("get approval: %d", code)
		}
		sign := func(k keys.PrivateKey) []byte {
			raw, err := approval.NewToken(&v.Request, k.Public(), approval.DecisionApproved, time.Now(), 5*time.Minute).Sign(k)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		stranger, _ := keys.Generate(nil)
		post := func(tok []byte, bearer string) (int, map[string]any) {
			req, _ := http.NewRequest("POST", d.url+"/approvals/"+id+"/respond", bytes.NewReader(append(append([]byte(`{"token":`), tok...), '}')))
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			json.NewDecoder(resp.Body).Decode(&m)
			return resp.StatusCode, m
		}
		// The admin bearer adds nothing: a token from a key outside the policy is refused.
		if status, m := post(sign(stranger), d.token); status != 403 || m["error"] != "approval_rejected" {
			t.Fatalf("untrusted: %d %v", status, m)
		}
		good := sign(lead)
		if status, m := post(good, ""); status != 200 || m["outcome"] != "approved" {
			t.Fatalf("approve: %d %v", status, m)
		}
		if status, m := post(good, ""); status != 409 || m["error"] != "replay_detected" {
			t.Fatalf("replay: %d %v", status, m)
		}
	})
}

// BenchmarkRespondToAwait measures respond → dispatched → waiter returns on
// loopback against the real chiod: the refund is parked, a waiter is parked
// on it, and the clock runs from sending the signed token until the waiter
// has the executed result. "longpoll" is an in-process GET /v1/calls/{id}
// ?wait=30s with a Chio-Proof; "chio-await" is the real `chio await`
// process (its start-up happens before the clock starts). Run with
// -benchtime=50x; p50/p95 are reported, never asserted.
func BenchmarkRespondToAwait(b *testing.B) {
	work := b.TempDir()
	root := repoRoot()
	d := startDaemon(b, filepath.Join(root, "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	lead, err := keys.LoadPrivateKey(filepath.Join(root, "examples", "keys", "finance-lead.pem"))
	if err != nil {
		b.Fatal(err)
	}
	a := newAgent(b, d, "refunds")
	agentPEM := filepath.Join(work, "agent.pem")
	if err := keys.WritePrivateKey(agentPEM, a.key); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{}
	seq := 0
	// park submits a refund and returns its approval id and a signed approval.
	park := func() (string, string, []byte) {
		seq++
		c := a.call(b, fmt.Sprintf("req-bench-%d-%d", time.Now().UnixNano(), seq), "demo", "issue_refund", approvalRefundArgs, approvalRefundIntent)
		code, out, err := postCall(context.Background(), client, d.url, c)
		if err != nil || code != 202 {
			b.Fatalf("park: %d %v %+v", code, err, out)
		}
		req := &approval.Request{ApprovalID: out.ApprovalRequestID, SubjectID: a.key.Public().String()}
		if req.ParameterHash, err = kernel.ParameterHash(c.Server, c.Tool, c.Arguments, c.GovernedIntent); err != nil {
			b.Fatal(err)
		}
		tok, err := approval.NewToken(req, lead.Public(), approval.DecisionApproved, time.Now(), 5*time.Minute).Sign(lead)
		if err != nil {
			b.Fatal(err)
		}
		return out.RequestID, out.ApprovalRequestID, append(append([]byte(`{"token":`), tok...), []byte(`,"channel":"bench"}`)...)
	}
	respond := func(approvalID string, body []byte) {
		resp, err := client.Post(d.url+"/approvals/"+approvalID+"/respond", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("respond: %d", resp.StatusCode)
		}
	}
	report := func(b *testing.B, lat []time.Duration) {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
		b.Logf("respond → dispatched → waiter returns over %d: p50 %s, p95 %s", len(lat), p50, p95)
	}

	b.Run("longpoll", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			rid, aid, body := park()
			got := make(chan time.Time, 1)
			go func() {
				req, _ := http.NewRequest("GET", d.url+"/v1/calls/"+rid+"?wait=30s", nil)
				req.Header.Set(httpapi.StatusProofHeader, httpapi.SignStatusProof(a.key, rid, time.Now()))
				resp, err := client.Do(req)
				if err == nil {
					var st httpapi.CallStatus
					json.NewDecoder(resp.Body).Decode(&st)
					resp.Body.Close()
					if st.Status != kernel.StatusAllowed {
						err = fmt.Errorf("status %q", st.Status)
					}
				}
				if err != nil {
					b.Error(err)
				}
				got <- time.Now()
			}()
			time.Sleep(20 * time.Millisecond) // let the long-poll park
			b.StartTimer()
			t0 := time.Now()
			respond(aid, body)
			lat = append(lat, (<-got).Sub(t0))
		}
		report(b, lat)
	})
	b.Run("chio-await", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			rid, aid, body := park()
			await := d.startBackground(b, work, []string{"CHIO_KEY=" + agentPEM}, "await", rid, "--timeout", "60s")
			time.Sleep(300 * time.Millisecond) // process start-up and the long-poll parked
			b.StartTimer()
			t0 := time.Now()
			respond(aid, body)
			if _, errOut, code := await.wait(b, 30*time.Second); code != 0 {
				b.Fatalf("await: %d %s", code, errOut)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
}
