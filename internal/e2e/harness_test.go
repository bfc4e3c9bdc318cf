package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chio-e2e-bin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	root := repoRoot()
	for _, c := range []string{"chiod", "chio"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "./cmd/"+c)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", c, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// daemon is a running chiod process.
type daemon struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	token   string
	logs    *bytes.Buffer
	mu      *sync.Mutex
	exited  chan struct{}
}

var addrRE = regexp.MustCompile(`"chiod serving" addr=(\S+)`)

// startDaemon runs chiod on an ephemeral loopback port and waits until it
// serves. The admin token is fixed through the environment.
func startDaemon(t testing.TB, config, dataDir string) *daemon {
	t.Helper()
	d := &daemon{dataDir: dataDir, token: "test-admin-token-0123456789abcdef0123", logs: &bytes.Buffer{}, mu: &sync.Mutex{}, exited: make(chan struct{})}
	d.cmd = exec.Command(filepath.Join(binDir, "chiod"), "-config", config, "-listen", "127.0.0.1:0", "-data-dir", dataDir)
	d.cmd.Env = append(os.Environ(), "CHIO_ADMIN_TOKEN="+d.token)
	stderr, _ := d.cmd.StderrPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.logs.WriteString(line + "\n")
			d.mu.Unlock()
			if m := addrRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() { d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() { // the daemon's side of a failure, for the CI log
			t.Logf("chiod log:\n%s", d.log())
		}
	})
	select {
	case a := <-addr:
		d.url = "http://" + a
	case <-d.exited:
		t.Fatalf("chiod exited:\n%s", d.log())
	case <-time.After(20 * time.Second):
		t.Fatalf("chiod did not start:\n%s", d.log())
	}
	return d
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

func (d *daemon) stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.exited
	}
}

func (d *daemon) kill9() {
	d.cmd.Process.Kill() // SIGKILL: no drain, no cleanup
	<-d.exited
}

// do sends JSON with the admin token and decodes the answer.
func (d *daemon) do(t testing.TB, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode
}

// chio runs the CLI binary against d and returns stdout, stderr, exit code.
func (d *daemon) chio(t testing.TB, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "chio"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHIO_URL="+d.url, "CHIO_ADMIN_TOKEN="+d.token)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(so.String()), se.String(), code
}

// agent is a key plus a capability issued by d.
type agent struct {
	key    keys.PrivateKey
	capRaw json.RawMessage
	capID  string
}

func newAgent(t testing.TB, d *daemon, grants ...string) *agent {
	t.Helper()
	k, _ := keys.Generate(nil)
	var resp struct {
		ID         string          `json:"id"`
		Capability json.RawMessage `json:"capability"`
	}
	if code := d.do(t, "POST", "/v1/capabilities", map[string]any{"subject": k.Public().String(), "grants": grants, "ttl": "1h"}, &resp); code != 201 {
		t.Fatalf("issue capability: %d", code)
	}
	return &agent{key: k, capRaw: resp.Capability, capID: resp.ID}
}

func (a *agent) call(t testing.TB, id, server, tool, args, intent string) *kernel.ToolCall {
	c := &kernel.ToolCall{RequestID: id, Capability: a.capRaw, Server: server, Tool: tool, Arguments: json.RawMessage(args)}
	if intent != "" {
		c.GovernedIntent = json.RawMessage(intent)
	}
	ph, err := kernel.ParameterHash(server, tool, c.Arguments, c.GovernedIntent)
	if err != nil {
		t.Fatal(err)
	}
	c.Proof, err = kernel.SignProof(a.key, id, a.capID, server, tool, ph, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func postCall(ctx context.Context, client *http.Client, url string, c *kernel.ToolCall) (int, *kernel.Outcome, error) {
	b, _ := json.Marshal(c)
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/calls", bytes.NewReader(b))
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out kernel.Outcome
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%d %s", resp.StatusCode, data)
	}
	return resp.StatusCode, &out, nil
}
