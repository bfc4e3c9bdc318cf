// Package pgtest starts a real, throwaway PostgreSQL server for tests: it
// initdb's a cluster into a temporary directory, starts postgres on a free
// loopback port and creates a fresh database per caller. The pgstore, the
// store conformance suite and the end-to-end replica tests share it.
//
// PostgreSQL binaries are found through CHIO_PG_BIN, then initdb on PATH,
// then /usr/lib/postgresql/*/bin. Run as root, the server runs as the
// "postgres" user (initdb refuses root), in directories that user owns.
//
// Tests that cannot start PostgreSQL skip with the reason, except when CI is
// "true": there a missing database is a failure, never a silent skip.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL cluster owned by this process.
type Server struct {
	dir  string // the cluster's parent directory (data/, socket)
	port int
	cmd  *exec.Cmd
	done chan struct{}
	logf *os.File
	dbs  atomic.Int64

	bin, data string              // to start it again (restart.go)
	cred      *syscall.Credential // the user it runs as, or nil
}

// Start initdb's a cluster into a new temporary directory and starts it.
// Stop it with Stop; a test binary that dies takes postgres with it
// (parent-death signal).
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chio-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s := &Server{dir: dir, done: make(chan struct{}), bin: bin, data: data, cred: cred}
		if s.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if lastErr = s.start(bin, data, cred); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) start(bin, data string, cred *syscall.Credential) error {
	logPath := filepath.Join(s.dir, "postgres.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	s.logf = f
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "max_connections=300", "-c", "shared_buffers=128MB",
		// Replicas' committers now and then take row locks in different
		// orders; the loser of a deadlock retries its batch, so find
		// deadlocks quickly (the default waits a second).
		"-c", "deadlock_timeout=100ms", "-c", "log_min_messages=warning")
	s.cmd.Stdout, s.cmd.Stderr = f, f
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		select {
		case <-s.done:
			f.Close()
			return fmt.Errorf("postgres exited: %s", tail(logPath))
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("postgres did not accept connections within 30 s: %v\n%s", err, tail(logPath))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DSN is the connection string of database db on this server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// PID is the postmaster's process id (its backends are its children).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// CreateDatabase creates a new, empty database and returns its DSN.
func (s *Server) CreateDatabase(prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d_%d", sanitize(prefix), os.Getpid(), s.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

// Stop shuts the server down (fast shutdown, then a kill) and removes its
// directory.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil {
		return
	}
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.logf != nil {
		s.logf.Close()
	}
	os.RemoveAll(s.dir)
}

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("CHIO_PG_BIN"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("CHIO_PG_BIN=%s holds no initdb and postgres", d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // the newest version first
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL binaries (initdb, postgres): install postgresql or set CHIO_PG_BIN")
}

// runAs returns the credential postgres runs under and hands dir to that
// user: root must not run it, so root runs it as "postgres".
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// The temporary directory's parents must be searchable by that user.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 40 {
		out = out[:40]
	}
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "db_" + out
	}
	return out
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// shared is the server of this test binary, started on first use.
var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns this test binary's server, starting it on first use.
// Call StopShared from TestMain after m.Run.
func Shared() (*Server, error) {
	shared.once.Do(func() { shared.srv, shared.err = Start() })
	return shared.srv, shared.err
}

// StopShared stops the server Shared started, if any.
func StopShared() {
	if shared.srv != nil {
		shared.srv.Stop()
	}
}
