package e2e

// Several chiod replicas (the real binary) on one PostgreSQL database
// (issue 13). Each test starts its own PostgreSQL (pgtest): without one the
// tests skip, except under CI=true where they fail.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
	chio "github.com/chiokernel/chio/sdk"
)

// replicaStore is appended to a policy: the store is PostgreSQL, the DSN in
// CHIO_PG_DSN, and a replica that stops heartbeating is gone after 3 s.
const replicaStore = `
[store]
driver = "postgres"
dsn_env = "CHIO_PG_DSN"
lease_seconds = 3
`

// cluster is n chiod replicas sharing one database and one kernel key.
type cluster struct {
	t      testing.TB
	config string
	dirs   []string
	mu     sync.Mutex
	nodes  []*daemon
}

// startPostgres starts this test's PostgreSQL server.
func startPostgres(t testing.TB) *pgtest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("replicas on PostgreSQL; run without -short")
	}
	srv, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// startCluster writes policy (plus the [store] table) and starts n
// replicas, each with its own data dir holding a copy of one kernel.pem.
func startCluster(t testing.TB, srv *pgtest.Server, policy string, n int) *cluster {
	t.Helper()
	dsn, err := srv.CreateDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CHIO_PG_DSN", dsn)
	work := t.TempDir()
	c := &cluster{t: t, config: filepath.Join(work, "chio.toml")}
	if err := os.WriteFile(c.config, []byte(policy+replicaStore), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		dir := filepath.Join(work, fmt.Sprintf("replica-%d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := keys.WritePrivateKey(filepath.Join(dir, "kernel.pem"), key); err != nil {
			t.Fatal(err)
		}
		c.dirs = append(c.dirs, dir)
		c.nodes = append(c.nodes, startDaemon(t, c.config, dir))
	}
	return c
}

func (c *cluster) node(i int) *daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i%len(c.nodes)]
}

func (c *cluster) restart(i int) {
	d := startDaemon(c.t, c.config, c.dirs[i])
	c.mu.Lock()
	c.nodes[i] = d
	c.mu.Unlock()
}

// park submits an approve_me-style call on d and returns its outcome.
func park(t *testing.T, d *daemon, a *agent, id, tool string) *kernel.Outcome {
	t.Helper()
	code, out, err := postCall(context.Background(), http.DefaultClient, d.url, a.call(t, id, "tools", tool, `{"x":1}`, ""))
	if err != nil || code != 202 || out.ApprovalRequestID == "" {
		t.Fatalf("park %s on %s: %d %+v %v", id, d.url, code, out, err)
	}
	return out
}

// receiptsOf lists the receipts of one request id (through any replica).
func receiptsOf(t *testing.T, d *daemon, requestID string) []map[string]any {
	t.Helper()
	var page struct {
		Receipts []map[string]any `json:"receipts"`
	}
	if code := d.do(t, "GET", "/v1/receipts?request_id="+requestID, nil, &page); code != 200 {
		t.Fatalf("list receipts of %s: %d", requestID, code)
	}
	return page.Receipts
}

func verdictOf(r map[string]any) string {
	d, _ := r["decision"].(map[string]any)
	v, _ := d["verdict"].(string)
	return v
}

// 100 concurrent presentations of one approval token, spread over three
// replicas: exactly one consumes it, the others are refused (never a 5xx),
// and the call is executed once.
func TestReplicasTokenRace(t *testing.T) {
	srv := startPostgres(t)
	tool := newCountingTool(t)
	approver, _ := keys.Generate(nil)
	c := startCluster(t, srv, fmt.Sprintf(crashPolicy, tool.url, approver.Public()), 3)
	a := newAgent(t, c.node(0), "asked")
	out := park(t, c.node(0), a, "race-1", "approve_me")
	cl, _ := chio.NewClient(c.node(1).url, chio.WithBearer(c.node(1).token))
	req, err := cl.Approval(context.Background(), out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := chio.SignApproval(req, approver)
	if err != nil {
		t.Fatal(err)
	}
	body := append(append([]byte(`{"token":`), tok...), '}')
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			resp, err := http.Post(c.node(i).url+"/approvals/"+out.ApprovalRequestID+"/respond", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				ok.Add(1)
			case 409:
				refused.Add(1)
			default:
				t.Errorf("presentation %d on replica %d: %d", i, i%3, resp.StatusCode)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 99 {
		t.Fatalf("%d presentations succeeded and %d were refused; want 1 and 99", ok.Load(), refused.Load())
	}
	var st kernel.Outcome
	c.node(2).do(t, "GET", "/v1/calls/race-1?wait=10s", nil, &st)
	deliveries, effects := tool.snapshot()
	if st.Status != kernel.StatusAllowed || effects["race-1"] != 1 || deliveries["race-1"] != 1 {
		t.Fatalf("call %q, %d effects, %d deliveries; want allowed, 1, 1", st.Status, effects["race-1"], deliveries["race-1"])
	}
	allows := 0
	for _, r := range receiptsOf(t, c.node(1), "race-1") {
		if verdictOf(r) == "allow" {
			allows++
		}
	}
	if allows != 1 {
		t.Fatalf("%d allow receipts for one approval", allows)
	}
}

// Deadlines armed by a replica that is killed fire on the others, each
// exactly once, whichever replica's sweep claims them; deadlines of live
// replicas fire once although three replicas sweep.
func TestReplicasTimersOfADeadReplica(t *testing.T) {
	srv := startPostgres(t)
	tool := newCountingTool(t)
	approver, _ := keys.Generate(nil)
	c := startCluster(t, srv, fmt.Sprintf(crashPolicy, tool.url, approver.Public()), 3)
	a := newAgent(t, c.node(0), "timed", "advisory")
	var ids []string
	for i := 0; i < 8; i++ {
		tool := map[bool]string{true: "deadline_deny", false: "deadline_auto"}[i%2 == 0]
		for n := 0; n < 2; n++ {
			id := fmt.Sprintf("timer-%d-%d", n, i)
			park(t, c.node(n), a, id, tool)
			ids = append(ids, id)
		}
	}
	c.node(0).kill9() // its timers die with it
	waitFor(t, "every deadline to fire on the surviving replicas", func() bool {
		for _, id := range ids {
			var st kernel.Outcome
			if c.node(1).do(t, "GET", "/v1/calls/"+id, nil, &st) != 200 || st.Status == kernel.StatusPendingApproval || st.Status == kernel.StatusDispatching {
				return false
			}
		}
		return true
	})
	_, effects := tool.snapshot()
	for _, id := range ids {
		rs := receiptsOf(t, c.node(2), id)
		finals := 0
		for _, r := range rs {
			if v := verdictOf(r); v == "deny" || v == "allow" {
				finals++
			}
		}
		auto := strings.Contains(fmt.Sprint(rs), "auto_approved")
		switch {
		case finals != 1:
			t.Errorf("%s: %d final receipts, want exactly 1 (%v)", id, finals, rs)
		case auto && effects[id] != 1:
			t.Errorf("%s: auto-approved, executed %d times", id, effects[id])
		case !auto && effects[id] != 0:
			t.Errorf("%s: denied at its deadline, executed %d times", id, effects[id])
		}
	}
}

// Events reach clients on any replica: a long-poll on one replica returns
// as soon as a call parked on a second is approved through a third, and a
// stream on one replica sees a request parked on another.
func TestReplicasEvents(t *testing.T) {
	srv := startPostgres(t)
	tool := newCountingTool(t)
	approver, _ := keys.Generate(nil)
	c := startCluster(t, srv, fmt.Sprintf(crashPolicy, tool.url, approver.Public()), 3)
	a := newAgent(t, c.node(0), "asked")

	stream, err := streamLines(c.node(2))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	out := park(t, c.node(0), a, "event-1", "approve_me")
	if !stream.await(out.ApprovalRequestID, 10*time.Second) {
		t.Fatalf("replica 2's stream never saw %s parked on replica 0", out.ApprovalRequestID)
	}

	waited := make(chan kernel.Outcome, 1)
	go func() {
		var st kernel.Outcome
		c.node(1).do(t, "GET", "/v1/calls/event-1?wait=60s", nil, &st)
		waited <- st
	}()
	time.Sleep(300 * time.Millisecond) // the long-poll is subscribed
	approve(context.Background(), c.node(2), out.ApprovalRequestID, approver, &crashLedger{})
	t0 := time.Now()
	select {
	case st := <-waited:
		if st.Status != kernel.StatusAllowed {
			t.Fatalf("long-poll on replica 1 returned %q", st.Status)
		}
		t.Logf("replica 1's long-poll returned %s after the approval on replica 2", time.Since(t0).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("replica 1's long-poll did not learn of the approval on replica 2")
	}
}

// sse reads one event stream line by line.
type sse struct {
	resp  *http.Response
	lines chan string
}

func streamLines(d *daemon) (*sse, error) {
	req, _ := http.NewRequest("GET", d.url+"/approvals/stream", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("stream: %d", resp.StatusCode)
	}
	s := &sse{resp: resp, lines: make(chan string, 1024)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	return s, nil
}

// await waits for an event line mentioning needle.
func (s *sse) await(needle string, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case l, open := <-s.lines:
			if !open {
				return false
			}
			if strings.HasPrefix(l, "data:") && strings.Contains(l, needle) {
				var e struct {
					Type string `json:"type"`
				}
				return json.Unmarshal([]byte(strings.TrimSpace(l[5:])), &e) == nil && e.Type != ""
			}
		case <-deadline:
			return false
		}
	}
}

func (s *sse) Close() { s.resp.Body.Close() }
