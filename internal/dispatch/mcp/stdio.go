package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnvAllowed lists the environment a stdio MCP server inherits. chiod's
// own environment holds its admin and reader tokens and channel secrets; an
// upstream server is a separate program and gets none of them. A server
// that needs a secret of its own gets it from a wrapper script named in
// `command`.
var childEnvAllowed = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "SHELL", "TERM",
	"NODE_PATH", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// childEnvPrefixes are inherited whole: locale, XDG directories.
var childEnvPrefixes = []string{"LC_", "XDG_"}

// npmConfigAllowed are the npm settings (npm_config_<key> or
// NPM_CONFIG_<key>) a stdio server inherits: what npx needs to find,
// fetch and cache a package. Any other is chiod's own and stays there:
// registry credentials (_authToken, _auth, //host/:_authToken, a client
// key), which the server has no use for, and the settings by which npm
// runs a program of their choosing (script_shell, node_options,
// userconfig or globalconfig naming another .npmrc, …).
var npmConfigAllowed = []string{"registry", "cache", "offline", "prefer-offline", "prefer-online",
	"proxy", "https-proxy", "noproxy", "strict-ssl", "ca", "cafile", "fetch-retries", "fetch-timeout",
	"yes", "update-notifier", "loglevel", "audit", "fund"}

// npmConfigKeep reports whether name is an npm setting a stdio server
// inherits. The key is read as npm reads it: '_' between words is '-'
// (a leading '_' is kept: "_authToken"), any case.
func npmConfigKeep(name string) bool {
	key, ok := strings.CutPrefix(name, "npm_config_")
	if !ok {
		key, ok = strings.CutPrefix(name, "NPM_CONFIG_")
	}
	if !ok || key == "" {
		return false
	}
	key = strings.ToLower(key)
	key = key[:1] + strings.ReplaceAll(key[1:], "_", "-")
	// A scope's registry, "@acme:registry" (its token is "//host/:_authToken").
	if scope, ok := strings.CutSuffix(key, ":registry"); ok && strings.HasPrefix(scope, "@") && !strings.ContainsAny(scope, ":/") {
		return true
	}
	return slices.Contains(npmConfigAllowed, key)
}

func childEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := npmConfigKeep(name)
		for _, a := range childEnvAllowed {
			keep = keep || name == a
		}
		for _, p := range childEnvPrefixes {
			keep = keep || strings.HasPrefix(name, p)
		}
		if keep && !strings.HasPrefix(name, "CHIO_") {
			out = append(out, kv)
		}
	}
	return out
}

// dialStdio starts argv as a stdio MCP server in its own process group (so
// that stopping it also stops what it spawned: `npx` runs the server as a
// child) and connects to it.
func (u *Upstream) dialStdio(argv []string) func(ctx context.Context) (*conn, error) {
	argv = append([]string(nil), argv...)
	return func(ctx context.Context) (*conn, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = childEnv(os.Environ())
		cmd.SysProcAttr = ownProcessGroup()
		// Our own pipe, not cmd.StdinPipe: its write end must take a
		// deadline (see stdinWriter).
		stdinR, stdinW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		cmd.Stdin = stdinR
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			stdinR.Close()
			stdinW.Close()
			return nil, err
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			stdinR.Close()
			stdinW.Close()
			return nil, err
		}
		err = cmd.Start()
		stdinR.Close() // the child holds its own copy
		if err != nil {
			stdinW.Close()
			return nil, err
		}
		go u.logStderr(stderr, cmd.Process.Pid)
		p := &process{cmd: cmd}
		t := newTap()
		stdin := &stdinWriter{f: stdinW, limit: u.timeout, fail: func() { go p.terminate() }}
		tr := &tapTransport{tap: t, inner: &mcpsdk.IOTransport{
			Reader: &lineLimit{r: stdout, tap: t}, Writer: stdin, MaxLineLength: 2 * MaxMessageBytes}}
		// The process must not outlive a failed or abandoned handshake.
		stopped := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				p.terminate()
			case <-stopped:
			}
		}()
		cs, err := u.client.Connect(ctx, tr, nil)
		close(stopped)
		if err != nil {
			p.terminate()
			return nil, err
		}
		return &conn{cs: cs, tap: t, pid: cmd.Process.Pid, stop: func() {
			cs.Close() // closes stdin: a well-behaved server exits on EOF
			p.terminate()
		}}, nil
	}
}

// stdinWriter bounds each write to a stdio server's stdin. The SDK checks
// a call's context only before it writes: a server that stops reading its
// stdin would block a message larger than the pipe buffer (and every write
// queued behind it) for good, past the call's timeout. A write not done
// within limit fails and ends the server (the pipe may hold part of a
// message, so the session cannot go on); run then reconnects.
type stdinWriter struct {
	mu    sync.Mutex
	f     *os.File // from os.Pipe: pollable, so it honours a write deadline
	limit time.Duration
	fail  func()
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.f.SetWriteDeadline(time.Now().Add(w.limit))
	n := 0
	if err == nil {
		n, err = w.f.Write(p)
	}
	if err != nil {
		w.fail()
		if n > 0 {
			// Part of the message is in the pipe: the server may read it
			// all (a JSON decoder needs no newline). Not "never sent".
			err = &partialWriteError{err: err}
		}
	}
	return n, err
}

func (w *stdinWriter) Close() error { return w.f.Close() }

// partialWriteError is a failed write that wrote some of its message.
type partialWriteError struct{ err error }

func (e *partialWriteError) Error() string { return "partial write: " + e.err.Error() }
func (e *partialWriteError) Unwrap() error { return e.err }

// process is a started stdio server.
type process struct {
	cmd  *exec.Cmd
	once sync.Once
}

// terminate ends the process group: SIGTERM, then SIGKILL after killGrace,
// and reaps the process. Only the first call acts; later calls wait for it.
func (p *process) terminate() { p.once.Do(p.kill) }

func (p *process) kill() {
	cmd := p.cmd
	signalGroup(cmd, false)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killGrace):
		signalGroup(cmd, true)
		<-done
	}
	// Whatever the group left behind (a grandchild that ignored SIGTERM).
	signalGroup(cmd, true)
}

// logStderr forwards the server's stderr to the log, line by line, each
// line cut to maxStderrLine. A server that floods stderr slows only itself.
func (u *Upstream) logStderr(r io.Reader, pid int) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			u.log.Info("mcp server stderr", "pid", pid, "line", clip(strings.TrimRight(string(line), "\r\n"), maxStderrLine))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// Skip the rest of an over-long line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			return
		}
	}
}
