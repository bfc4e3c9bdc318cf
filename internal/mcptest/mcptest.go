// Package mcptest finds and starts the real MCP peers that chio's MCP tests
// run against: the reference server (@modelcontextprotocol/server-everything),
// the TypeScript SDK and chio's own node peers, installed under
// testdata/mcp by `npm ci` (.ci/run does it).
//
// Without them a test skips on a developer machine and FAILS under CI=true:
// a CI run that silently skipped the MCP tests would prove nothing.
package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Dir is testdata/mcp at the repository root.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mcp")
}

// Require returns node's path and Dir, or skips (fails under CI=true) when
// node or the installed packages are missing.
func Require(t testing.TB) (node, dir string) {
	t.Helper()
	dir = Dir()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(EverythingScript())
	}
	if err != nil {
		msg := fmt.Sprintf("MCP peers missing (%v): run `npm ci --prefix testdata/mcp`", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, dir
}

// EverythingScript is the reference server's entry point.
func EverythingScript() string {
	return filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// EverythingStdio is the command line of the reference server over stdio.
func EverythingStdio(t testing.TB) []string {
	node, _ := Require(t)
	return []string{node, EverythingScript(), "stdio"}
}

// PeerStdio is the command line of chio's test peer (peer-server.mjs).
func PeerStdio(t testing.TB) []string {
	node, dir := Require(t)
	return []string{node, filepath.Join(dir, "peer-server.mjs")}
}

// HTTPServer is a running reference server over Streamable HTTP.
type HTTPServer struct {
	URL  string // http://127.0.0.1:PORT/mcp
	Port int
	cmd  *exec.Cmd
	t    testing.TB
}

// StartEverythingHTTP runs the reference server's Streamable HTTP transport
// on a free loopback port (port 0 picks one) and waits until it listens.
func StartEverythingHTTP(t testing.TB, port int) *HTTPServer {
	t.Helper()
	node, _ := Require(t)
	if port == 0 {
		port = FreePort(t)
	}
	cmd := exec.Command(node, EverythingScript(), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &HTTPServer{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Port: port, cmd: cmd, t: t}
	t.Cleanup(s.Stop)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything (streamableHttp) did not start")
	}
	return s
}

// Stop kills the server (idempotent).
func (s *HTTPServer) Stop() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Eventually polls cond every 20 ms until it holds or d passes.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
