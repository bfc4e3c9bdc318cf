package chio_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

// The examples run against a real chiod: TestMain builds it, starts it
// with examples/policies/quickstart.toml, issues the example agent a key
// and a capability and points CHIO_URL, CHIO_KEY and CHIO_CAPABILITY at
// them, then runs from the repository root so example paths read as in the
// docs ("examples/keys/finance-lead.pem").
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

const readToken = "example-read-token-0123456789abcdef"

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "chio-sdk-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	bin := filepath.Join(tmp, "chiod")
	build := exec.Command("go", "build", "-o", bin, "./cmd/chiod")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build chiod: %v\n%s", err, out)
		return 1
	}
	const admin = "example-admin-token-0123456789abcdef"
	d := exec.Command(bin, "-config", filepath.Join(root, "examples", "policies", "quickstart.toml"),
		"-listen", "127.0.0.1:0", "-data-dir", filepath.Join(tmp, "data"))
	d.Env = append(os.Environ(), "CHIO_ADMIN_TOKEN="+admin, "CHIO_READ_TOKEN="+readToken)
	stderr, _ := d.StderrPipe()
	if err := d.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { d.Process.Signal(os.Interrupt); d.Wait() }()
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`"chiod serving" addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "chiod did not start")
		return 1
	}
	if err := issueAgent(url, admin, tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("CHIO_URL", url)
	os.Setenv("CHIO_READ_TOKEN", readToken)
	if err := os.Chdir(root); err != nil {
		panic(err)
	}
	return m.Run()
}

// issueAgent writes agent.pem and agent.cap (grants of quickstart.toml)
// and exports them as CHIO_KEY and CHIO_CAPABILITY.
func issueAgent(url, admin, dir string) error {
	k, err := keys.Generate(nil)
	if err != nil {
		return err
	}
	keyFile, capFile := filepath.Join(dir, "agent.pem"), filepath.Join(dir, "agent.cap")
	if err := keys.WritePrivateKey(keyFile, k); err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"subject": k.Public().String(),
		"grants": []string{"echo", "refunds", "files", "confirm", "ask"}, "ttl": "1h"})
	req, _ := http.NewRequest("POST", url+"/v1/capabilities", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Capability json.RawMessage `json:"capability"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 201 {
		return fmt.Errorf("issue capability: %d %v", resp.StatusCode, err)
	}
	if err := os.WriteFile(capFile, out.Capability, 0o600); err != nil {
		return err
	}
	os.Setenv("CHIO_KEY", keyFile)
	os.Setenv("CHIO_CAPABILITY", capFile)
	return nil
}
