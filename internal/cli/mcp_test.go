package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
)

// `chio mcp serve` refuses to start on bad input, saying why; the working
// bridge is exercised end to end by internal/e2e (TestMCP*).
func TestMCPServeUsage(t *testing.T) {
	dir := t.TempDir()
	k, _ := keys.Generate(nil)
	keyFile := filepath.Join(dir, "agent.pem")
	if err := keys.WritePrivateKey(keyFile, k); err != nil {
		t.Fatal(err)
	}
	capFile := filepath.Join(dir, "agent.cap")
	os.WriteFile(capFile, []byte(`{"id":"cap-1","subject":"ed25519:00"}`), 0o600)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no flags", nil, cli.ExitUsage, "usage: chio mcp serve"},
		{"stray argument", []string{"--capability", capFile, "--key", keyFile, "x"}, cli.ExitUsage, "usage"},
		{"wait too long", []string{"--capability", capFile, "--key", keyFile, "--pending-wait", "11m"}, cli.ExitUsage, "usage"},
		{"listen beyond loopback", []string{"--capability", capFile, "--key", keyFile, "--listen", "0.0.0.0:7421"}, cli.ExitUsage, "loopback"},
		{"missing key file", []string{"--capability", capFile, "--key", filepath.Join(dir, "nope.pem")}, cli.ExitError, "nope.pem"},
		{"capability of another key", []string{"--capability", capFile, "--key", keyFile, "--url", "http://127.0.0.1:1"}, cli.ExitError, "is not this key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var so, se bytes.Buffer
			code := cli.Main(append([]string{"mcp", "serve"}, tc.args...),
				&cli.Env{Stdin: strings.NewReader(""), Stdout: &so, Stderr: &se, Getenv: func(string) string { return "" }})
			if code != tc.code || !strings.Contains(se.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, se.String(), tc.code, tc.want)
			}
			if so.Len() != 0 {
				t.Fatalf("stdout is the protocol channel and must stay empty: %q", so.String())
			}
		})
	}
}
