package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	sdk "github.com/chiokernel/chio/sdk"
)

// The quickstart's CFO approver entry (examples/keys/cfo.pem), the only
// place the file names that key.
const quickstartCFO = `[[grants.approval.approvers]]
public_key = "ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588"  # examples/keys/cfo.pem
display_name = "CFO"
contact = { email = "cfo@example.com" }
`

// cfoKey is the quickstart's demo CFO key.
func cfoKey(t *testing.T) keys.PrivateKey {
	t.Helper()
	k, err := keys.LoadPrivateKey(filepath.Join("..", "..", "examples", "keys", "cfo.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signInAt opens an approver session for k on chiod at url and returns
// its cookie value.
func signInAt(t *testing.T, url string, k keys.PrivateKey) string {
	t.Helper()
	resp, err := http.Get(url + "/v1/session/challenge")
	if err != nil {
		t.Fatal(err)
	}
	var ch struct{ Challenge string }
	err = json.NewDecoder(resp.Body).Decode(&ch)
	resp.Body.Close()
	if err != nil || ch.Challenge == "" {
		t.Fatalf("challenge: %d %v", resp.StatusCode, err)
	}
	pub := k.Public().String()
	payload, err := canon.Marshal(map[string]string{"challenge": ch.Challenge, "public_key": pub})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(httpapi.SessionLogin{PublicKey: pub, Challenge: ch.Challenge,
		Signature: hex.EncodeToString(k.SignRaw(signed.Message(httpapi.SessionDomain, payload)))})
	resp, err = http.Post(url+"/v1/session", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("sign-in: %d, no session cookie", resp.StatusCode)
	return ""
}

// withSession sends GET path with session cookie id and returns the status.
func withSession(t *testing.T, url, path, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url+path, nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// writeConfig replaces the fixture's policy file.
func (f *reloadFixture) writeConfig(t *testing.T, src string) {
	t.Helper()
	if err := os.WriteFile(f.config, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A reload that removes an approver's key ends that approver's sessions
// and their event streams then and there, not when one of them is next
// presented. Otherwise a session nobody presented while the key was out
// (the browser was closed) and a stream that got no frame meanwhile came
// back to life when a later reload put the key back: the platform team
// removed the key, and whoever held a copy of that cookie read again —
// pending requests, their arguments — without signing anything. The
// second reload's outcome line is logged after the first reload (and
// whatever chiod does after it) has finished: reloads run one at a time.
func TestReloadRemovingApproverEndsTheirSessions(t *testing.T) {
	f := newReloadFixture(t)
	raw, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	withCFO := string(raw)
	withoutCFO := strings.Replace(withCFO, quickstartCFO, "", 1)
	if withoutCFO == withCFO || strings.Contains(withoutCFO, "264f3c00fa147d83") {
		t.Fatal("the quickstart's CFO approver entry moved; update this test")
	}
	cfo := cfoKey(t)
	closed := signInAt(t, f.r.url, cfo) // a browser that is then closed
	streaming := signInAt(t, f.r.url, cfo)
	if code := withSession(t, f.r.url, "/v1/session", closed); code != 200 {
		t.Fatalf("CFO session before any reload: %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.r.url+"/approvals/stream", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: streaming})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("CFO stream: %d", resp.StatusCode)
	}

	f.writeConfig(t, withoutCFO)
	f.hup(t, 1)
	f.writeConfig(t, withCFO)
	f.hup(t, 2)
	if out := f.r.out.String(); strings.Count(out, "policy reloaded") != 2 {
		t.Fatalf("both reloads should have been applied:\n%s", out)
	}

	if code := withSession(t, f.r.url, "/v1/session", closed); code != 401 {
		t.Fatalf("a session of the CFO, not presented while a reload had removed the key, answers %d once the key is back, want 401: the reload that removed the key must have ended it", code)
	}
	res := f.park(t)
	p, ok := res.(*sdk.PendingApproval)
	if !ok {
		t.Fatalf("want pending: %#v", res)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), p.ApprovalID) {
			t.Fatalf("the CFO's stream, opened before a reload removed the key, received request %s after the key was put back: the reload that removed the key must have ended it", p.ApprovalID)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the CFO's stream neither ended nor delivered the new request")
	}
	if code := withSession(t, f.r.url, "/v1/session", streaming); code != 401 {
		t.Fatalf("the stream's session answers %d, want 401", code)
	}
	if code := withSession(t, f.r.url, "/v1/session", signInAt(t, f.r.url, cfo)); code != 200 {
		t.Fatalf("the CFO, back in the policy, signing in again: %d", code)
	}
}

// A reload that is refused changes nothing, sessions included: a file that
// removes the CFO but cannot be put in force (here, it does not parse)
// leaves the CFO's session and stream as they were.
func TestRefusedReloadKeepsSessions(t *testing.T) {
	f := newReloadFixture(t)
	raw, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	withoutCFO := strings.Replace(string(raw), quickstartCFO, "", 1)
	if withoutCFO == string(raw) {
		t.Fatal("the quickstart's CFO approver entry moved; update this test")
	}
	id := signInAt(t, f.r.url, cfoKey(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.r.url+"/approvals/stream", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("CFO stream: %d", resp.StatusCode)
	}
	f.writeConfig(t, withoutCFO+"\n[[grants]\n")
	f.hup(t, 1)
	if out := f.r.out.String(); !strings.Contains(out, "policy reload refused") || strings.Contains(out, "policy reloaded") {
		t.Fatalf("the broken file was not refused:\n%s", out)
	}
	if code := withSession(t, f.r.url, "/v1/session", id); code != 200 {
		t.Fatalf("a refused reload ended the CFO's session: %d", code)
	}
	p, ok := f.park(t).(*sdk.PendingApproval)
	if !ok {
		t.Fatal("want pending")
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), p.ApprovalID) {
			return
		}
	}
	t.Fatalf("the CFO's stream ended at a refused reload, before request %s", p.ApprovalID)
}
