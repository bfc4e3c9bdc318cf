package e2e

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// streamsPolicy parks every "bulk" call and shows its arguments to the
// approvers: the largest thing a live view replays. "open" is the same
// tool, allowed. %s adds the approvers whose sessions open streams.
const streamsPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
action = "echo"

[[grants]]
id = "bulk"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
%s
[[grants]]
id = "open"
server = "demo"
tool = "echo"
`

const (
	floodApprovers  = 40   // sessions, each its own credential
	slowStreams     = 100  // opened and never read
	floodAttempts   = 1500 // further stream attempts
	floodWorkers    = 16
	bigArgsBytes    = 200 << 10 // exposed arguments of each parked call
	rssCeilingBytes = 200 << 20 // issue 10: chiod must stay under this
	streamsReadTok  = "test-read-token-0123456789abcdef0123456"
)

// TestStreamFloodStaysBounded is issue 10's measurement as a regression
// test: parked calls with the largest purpose accepted (and large exposed
// arguments), 100 event streams that never read, ~1,500 more attempts from
// 42 credentials. chiod's resident memory stays under 200 MB, calls are
// still answered, and an agent's `chio await` returns once its call is
// approved. An over-long purpose is refused and changes nothing.
func TestStreamFloodStaysBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads chiod's memory from /proc")
	}
	work := t.TempDir()
	approvers := make([]keys.PrivateKey, floodApprovers)
	var entries strings.Builder
	for i := range approvers {
		approvers[i], _ = keys.Generate(nil)
		fmt.Fprintf(&entries, "[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Approver %d\"\n", approvers[i].Public().String(), i)
	}
	policyPath := filepath.Join(work, "streams.toml")
	if err := os.WriteFile(policyPath, []byte(fmt.Sprintf(streamsPolicy, entries.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CHIO_READ_TOKEN", streamsReadTok)
	d := startDaemon(t, policyPath, filepath.Join(work, "data"))
	mem := &rssProbe{pid: d.cmd.Process.Pid}
	mem.log(t, "started")

	// The agent: a key file and capability for the CLI (chio await), the
	// same key in process for calls too large for a command line.
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatal("keygen")
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "bulk", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %s", errOut)
	}
	bulk := loadAgent(t, work)
	open := newAgent(t, d, "open")

	purpose := strings.Repeat("p", kernel.MaxPurposeLen) // the largest accepted
	bigArgs := `{"blob":"` + strings.Repeat("b", bigArgsBytes) + `"}`
	intent := `{"purpose":"` + purpose + `"}`
	for i := 0; i < 5; i++ {
		if status, body := postRaw(t, d, bulk.call(t, fmt.Sprintf("big-%d", i), "demo", "echo", bigArgs, intent)); status != 202 {
			t.Fatalf("park %d: %d %s", i, status, body)
		}
	}
	mem.log(t, "5 calls parked (1 KiB purpose, 200 KiB exposed arguments)")

	t.Run("over-long purpose refused, nothing changed", func(t *testing.T) {
		pending, receipts := countPending(t, d), countReceipts(t, d)
		over := `{"purpose":"` + purpose + `x"}`
		status, body := postRaw(t, d, bulk.call(t, "too-long", "demo", "echo", `{"n":1}`, over))
		var e struct{ Error, Message string }
		if status != 400 || json.Unmarshal(body, &e) != nil || e.Error != "bad_request" || !strings.Contains(e.Message, "purpose") {
			t.Fatalf("over-long purpose: %d %s", status, body)
		}
		if p, r := countPending(t, d), countReceipts(t, d); p != pending || r != receipts {
			t.Fatalf("a refused call changed state: pending %d→%d, receipts %d→%d", pending, p, receipts, r)
		}
		if code := d.do(t, "GET", "/v1/calls/too-long", nil, nil); code != 404 {
			t.Fatalf("refused call has a record: %d", code)
		}
	})

	// Credentials: the two tokens and one session per approver.
	creds := []string{"Authorization: Bearer " + d.token, "Authorization: Bearer " + streamsReadTok}
	shares := []int{httpapi.MaxStreamsPerToken, httpapi.MaxStreamsPerToken}
	for _, k := range approvers {
		creds = append(creds, "Cookie: "+httpapi.SessionCookie+"="+signIn(t, d, k))
		shares = append(shares, httpapi.MaxStreamsPerApprover)
	}

	// 100 streams that send their request and never read a byte, filling
	// each credential's share in turn (the admin token's first).
	var held connSet
	t.Cleanup(held.closeAll) // before chiod stops
	for c, n := 0, 0; n < slowStreams; c++ {
		for i := 0; i < shares[c] && n < slowStreams; i, n = i+1, n+1 {
			held.add(dialStream(t, d, creds[c]))
		}
	}
	waitFor(t, "the never-reading streams to be served", func() bool { return streamGauge(t, d, "stream") == slowStreams })
	// chiod holds them: the admin token's share is used up.
	if status, body := streamStatus(t, d, creds[0]); status != http.StatusTooManyRequests {
		t.Fatalf("admin stream beyond its share: %d %s", status, body)
	}
	mem.log(t, "100 never-reading streams")

	// The flood: attempts round-robin over every credential, each reading
	// only the answer's head; accepted streams stay open, unread.
	var next atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	var bad []string
	var wg sync.WaitGroup
	for w := 0; w < floodWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= floodAttempts {
					return
				}
				status, problem, conn := attemptStream(d, creds[i%len(creds)])
				mu.Lock()
				statuses[status]++
				if problem != "" && len(bad) < 5 {
					bad = append(bad, problem)
				}
				mu.Unlock()
				if conn != nil {
					held.add(conn)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d stream attempts: %v (HTTP status → count)", floodAttempts, statuses)
	if len(bad) > 0 {
		t.Fatalf("refusals without the error envelope: %q", bad)
	}
	for s := range statuses {
		if s != 200 && s != 429 && s != 503 {
			t.Fatalf("unexpected answers to stream attempts: %v", statuses)
		}
	}
	// 42 credentials' shares add up to more than the global cap: both the
	// per-credential and the global refusal must have been seen.
	if statuses[429] == 0 || statuses[503] == 0 || statuses[200]+slowStreams < kernel.MaxStreamSubscribers {
		t.Fatalf("caps not reached as expected: %v", statuses)
	}
	mem.log(t, "after the flood")

	// Live events while every stream slot is held by a reader that does
	// not read: five more large requests, each fanned out to all of them.
	for i := 0; i < 5; i++ {
		if status, body := postRaw(t, d, bulk.call(t, fmt.Sprintf("live-%d", i), "demo", "echo", bigArgs, intent)); status != 202 {
			t.Fatalf("park during the flood: %d %s", status, body)
		}
	}
	mem.log(t, "5 more large requests published to the held streams")

	t.Run("calls are still answered", func(t *testing.T) {
		start := time.Now()
		status, body := postRaw(t, d, open.call(t, "open-1", "demo", "echo", `{"hello":"flood"}`, ""))
		if status != 200 || !strings.Contains(string(body), `"hello":"flood"`) {
			t.Fatalf("POST /v1/calls during the flood: %d %s", status, body)
		}
		t.Logf("POST /v1/calls answered in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("chio await returns once approved", func(t *testing.T) {
		id, errOut, code := d.chio(t, work, "call", "demo", "echo", "--args", `{"await":"me"}`, "--intent", `{"purpose":"await during the flood"}`,
			"--capability", "agent.cap", "--key", "agent.pem")
		if code != 3 || !strings.HasPrefix(id, "ar-") {
			t.Fatalf("call: exit %d %q %s", code, id, errOut)
		}
		await := d.startBackground(t, work, []string{"CHIO_KEY=" + filepath.Join(work, "agent.pem")}, "await", id, "--timeout", "60s")
		// The await is parked on a long-poll, while every stream slot is
		// taken, before the approval is given.
		waitFor(t, "chio await to long-poll", func() bool { return streamGauge(t, d, "wait") == 1 })
		leadKey := filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem")
		start := time.Now()
		if out, errOut, code := d.chio(t, work, "approval", "approve", id, "--key", leadKey); code != 0 {
			t.Fatalf("approve: %d %s %s", code, out, errOut)
		}
		out, errOut, code := await.wait(t, 20*time.Second)
		if code != 0 || !strings.Contains(out, `"await":"me"`) {
			t.Fatalf("await: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		t.Logf("chio await returned %s after the approval", time.Since(start).Round(time.Millisecond))
	})

	t.Logf("open streams %d, long-polls %d", streamGauge(t, d, "stream"), streamGauge(t, d, "wait"))
	peak := mem.log(t, "end")
	t.Logf("chiod peak RSS (VmHWM) %d MiB with %d connections held; ceiling %d MiB", peak>>20, held.len(), rssCeilingBytes>>20)
	if peak >= rssCeilingBytes {
		t.Fatalf("chiod peaked at %d MiB, over the %d MiB ceiling", peak>>20, rssCeilingBytes>>20)
	}
}

// rssProbe reads a process's resident memory from /proc.
type rssProbe struct{ pid int }

// log logs the current and peak resident set and returns the peak.
func (p *rssProbe) log(t *testing.T, when string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) int64 {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10
			}
		}
		t.Fatalf("no %s in /proc/%d/status", name, p.pid)
		return 0
	}
	rss, peak := field("VmRSS"), field("VmHWM")
	t.Logf("chiod RSS %-58s %4d MiB (peak %d MiB)", when+":", rss>>20, peak>>20)
	return peak
}

// loadAgent reads the agent key and capability the CLI wrote in dir.
func loadAgent(t *testing.T, dir string) *agent {
	t.Helper()
	k, err := keys.LoadPrivateKey(filepath.Join(dir, "agent.pem"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "agent.cap"))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.TrimSpace(raw)
	var head struct{ ID string }
	if err := json.Unmarshal(raw, &head); err != nil {
		t.Fatal(err)
	}
	return &agent{key: k, capRaw: raw, capID: head.ID}
}

// postRaw posts a call and returns the status and body.
func postRaw(t *testing.T, d *daemon, c *kernel.ToolCall) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(c)
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(d.url+"/v1/calls", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func countPending(t *testing.T, d *daemon) int {
	t.Helper()
	var p struct{ Count int }
	if code := d.do(t, "GET", "/approvals/pending?limit=1000", nil, &p); code != 200 {
		t.Fatalf("pending: %d", code)
	}
	return p.Count
}

func countReceipts(t *testing.T, d *daemon) int {
	t.Helper()
	var p struct{ Receipts []json.RawMessage }
	if code := d.do(t, "GET", "/v1/receipts?limit=1000", nil, &p); code != 200 {
		t.Fatalf("receipts: %d", code)
	}
	return len(p.Receipts)
}

// signIn opens an approver session for k and returns its cookie value.
func signIn(t *testing.T, d *daemon, k keys.PrivateKey) string {
	t.Helper()
	return signInAt(t, d.url, k)
}

// signInAt opens an approver session for k at chiod's base URL.
func signInAt(t *testing.T, base string, k keys.PrivateKey) string {
	t.Helper()
	var ch struct{ Challenge string }
	chResp, err := http.Get(base + "/v1/session/challenge")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(chResp.Body).Decode(&ch)
	chResp.Body.Close()
	if chResp.StatusCode != 200 || err != nil {
		t.Fatalf("challenge: %d %v", chResp.StatusCode, err)
	}
	pub := k.Public().String()
	payload, err := canon.Marshal(map[string]string{"challenge": ch.Challenge, "public_key": pub})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(httpapi.SessionLogin{PublicKey: pub, Challenge: ch.Challenge,
		Signature: hex.EncodeToString(k.SignRaw(signed.Message(httpapi.SessionDomain, payload)))})
	resp, err := http.Post(base+"/v1/session", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie && resp.StatusCode == 200 {
			return c.Value
		}
	}
	t.Fatalf("sign-in: %d, no session cookie", resp.StatusCode)
	return ""
}

func streamRequest(cred string) string {
	return "GET /approvals/stream HTTP/1.1\r\nHost: chiod\r\nAccept: text/event-stream\r\n" + cred + "\r\n\r\n"
}

// dialStream sends a stream request and never reads the connection.
func dialStream(t *testing.T, d *daemon, cred string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, streamRequest(cred)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// attemptStream asks for a stream and reads only the answer's head. An
// accepted stream's connection is returned open and is never read again;
// a refusal is checked for the error envelope and Retry-After and closed.
func attemptStream(d *daemon, cred string) (status int, problem string, held net.Conn) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
	if err != nil {
		return -1, err.Error(), nil
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, streamRequest(cred)); err != nil {
		conn.Close()
		return -1, err.Error(), nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return -1, err.Error(), nil
	}
	if resp.StatusCode == 200 {
		conn.SetDeadline(time.Time{})
		return 200, "", conn
	}
	defer conn.Close()
	var e struct{ Error, Message string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if json.Unmarshal(body, &e) != nil || e.Error != "unavailable" || e.Message == "" || resp.Header.Get("Retry-After") == "" {
		problem = fmt.Sprintf("%d %q Retry-After=%q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	return resp.StatusCode, problem, nil
}

// streamStatus asks for a stream with an ordinary client and returns the
// status; an accepted stream is closed at once.
func streamStatus(t *testing.T, d *daemon, cred string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", d.url+"/approvals/stream", nil)
	name, value, _ := strings.Cut(cred, ": ")
	req.Header.Set(name, value)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 {
		return 200, nil
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// streamGauge reads chio_event_subscribers{pool} from /metrics.
func streamGauge(t *testing.T, d *daemon, pool string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", d.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token) // /metrics needs a token
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	prefix := `chio_event_subscribers{pool="` + pool + `"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("no %s in /metrics", prefix)
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connSet holds connections until the test ends.
type connSet struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = append(s.conns, c)
}

func (s *connSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}
