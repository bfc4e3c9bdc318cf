package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestBashAgent runs testdata/agent_loop.sh — an agent whose only tool is
// bash — against a real chiod, with the built chio on PATH and a background
// approver, and checks every exit code of `chio call` / `chio await`:
// 0 allowed, 3 then 0 pending → approved, 4 denied (by a guard and by a
// human), 3 then 5 still pending at --timeout 2s; and --output json.
func TestBashAgent(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	work := t.TempDir()
	d := startDaemon(t, quickstart(), filepath.Join(work, "data"))
	pub, errOut, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, errOut)
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "echo",
		"--grant", "refunds", "--grant", "files", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %d %s", code, errOut)
	}
	out := filepath.Join(work, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bash, filepath.Join(repoRoot(), "internal", "e2e", "testdata", "agent_loop.sh"))
	cmd.Dir = work
	// The agent gets no bearer token: only its key, capability and URL.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHIO_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CHIO_URL="+d.url, "CHIO_KEY="+filepath.Join(work, "agent.pem"), "CHIO_CAPABILITY="+filepath.Join(work, "agent.cap"),
		"APPROVER_KEY="+filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"), "APPROVER_TOKEN="+d.token, "OUT="+out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}

	got := map[string]int{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "result" {
			n, _ := strconv.Atoi(f[3])
			got[f[1]+" "+f[2]] = n
		}
	}
	want := map[string]int{
		"echo done":   0,
		"refund call": 3, "refund await": 0, "refund done": 0, "refund approver": 0,
		"delete call":        4,
		"refund_denied call": 3, "refund_denied await": 4, "refund_denied approver": 0,
		"refund_waiting call": 3, "refund_waiting await": 5,
		"echo_json done":   0,
		"refund_json call": 3, "refund_json await": 0, "refund_json done": 0, "refund_json approver": 0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exit codes\n got %v\nwant %v\nstderr:\n%s", got, want, stderr.String())
	}

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read("refund"); !strings.Contains(s, `"refund_id"`) {
		t.Errorf("approved refund output: %s", s)
	}
	if s := read("refund_denied"); !strings.Contains(s, "human-approval") || !strings.Contains(s, "not today") {
		t.Errorf("denied refund output: %s", s)
	}
	if s := read("delete"); !strings.Contains(s, "forbidden_paths") {
		t.Errorf("denied delete output: %s", s)
	}
	var echoed struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	var compact bytes.Buffer
	err = json.Unmarshal([]byte(read("echo_json")), &echoed)
	if err == nil {
		err = json.Compact(&compact, echoed.Output)
	}
	if err != nil || echoed.Status != "allowed" || compact.String() != `{"echo":{"hello":"json"}}` {
		t.Errorf("echo --output json: %v %+v", err, echoed)
	}
	var awaited struct {
		Status   string `json:"status"`
		Approval struct {
			ApproverDisplayName string `json:"approver_display_name"`
			Note                string `json:"note"`
		} `json:"approval"`
	}
	if err := json.Unmarshal([]byte(read("refund_json")), &awaited); err != nil || awaited.Status != "allowed" ||
		awaited.Approval.Note != "ok from bash" || awaited.Approval.ApproverDisplayName != "Finance Lead" {
		t.Errorf("await --output json: %v %+v", err, awaited)
	}
}
