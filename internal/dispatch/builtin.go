package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/chiokernel/chio/internal/atomicfile"
	"github.com/chiokernel/chio/kernel"
)

// builtin is the state of the in-process demo tools, kept under
// <dataDir>/builtin/:
//
//	requests/<sha256(request_id)>.json  one idempotency record per request
//	ledger.jsonl                        issue_refund's append-only ledger
//	sandbox/                            the only tree delete_file can touch
//
// One mutex serializes every builtin call, which makes "look up the record,
// perform the effect, write the record" atomic across goroutines. The demo
// tools are not the hot path, so the simplicity is worth the contention.
type builtin struct {
	mu       sync.Mutex
	dir      string
	requests string
	ledger   string
	sandbox  string
}

// record is the persisted result of one request id. Replaying it is what
// makes a retried call return the first answer without a second effect.
type record struct {
	RequestID string          `json:"request_id"`
	Tool      string          `json:"tool"`
	Output    json.RawMessage `json:"output"`
	ToolError string          `json:"tool_error,omitempty"`
}

func openBuiltin(dataDir string) (*builtin, error) {
	dir := filepath.Join(dataDir, "builtin")
	b := &builtin{
		dir:      dir,
		requests: filepath.Join(dir, "requests"),
		ledger:   filepath.Join(dir, "ledger.jsonl"),
		sandbox:  filepath.Join(dir, "sandbox"),
	}
	// Checked parent first: each Lstat below goes through the ones above.
	for _, p := range []string{b.dir, b.requests, b.ledger, b.sandbox} {
		if err := refuseLink(p); err != nil {
			return nil, fmt.Errorf("dispatch: builtin state: %w", err)
		}
	}
	if err := os.MkdirAll(b.requests, 0o700); err != nil {
		return nil, fmt.Errorf("dispatch: builtin state: %w", err)
	}
	f, err := b.openLedger(os.O_RDWR | os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("dispatch: builtin ledger: %w", err)
	}
	defer f.Close()
	if err := b.seedSandbox(); err != nil {
		return nil, fmt.Errorf("dispatch: builtin sandbox: %w", err)
	}
	if err := b.recoverLedger(f); err != nil {
		return nil, fmt.Errorf("dispatch: builtin ledger recovery: %w", err)
	}
	// Make the directory entries created above durable.
	if err := atomicfile.SyncDir(b.dir); err != nil {
		return nil, err
	}
	return b, nil
}

// dispatch runs req at most once per request id.
func (b *builtin) dispatch(ctx context.Context, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	// echo has no effect to repeat: running it twice is the same as once, so
	// it needs neither the lock nor a durable record (which would cost two
	// fsyncs per call on the hottest demo path).
	if req.Tool == "echo" {
		out, toolErr, err := echo(req.Arguments)
		return kernel.DispatchResult{Output: out, ToolError: toolErr}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	path := filepath.Join(b.requests, recordName(req.RequestID))
	if rec, err := readRecord(path); err == nil {
		return kernel.DispatchResult{Output: rec.Output, ToolError: rec.ToolError}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		// A record we cannot read must not be mistaken for "never ran".
		return kernel.DispatchResult{}, err
	}
	// Last chance to give up before the effect: after it, we finish.
	if err := ctx.Err(); err != nil {
		return kernel.DispatchResult{}, err
	}
	out, toolErr, err := b.run(req)
	if err != nil {
		return kernel.DispatchResult{}, err
	}
	if out == nil {
		out = json.RawMessage("null")
	}
	rec := record{RequestID: req.RequestID, Tool: req.Tool, Output: out, ToolError: toolErr}
	if err := writeRecord(path, rec); err != nil {
		return kernel.DispatchResult{}, err
	}
	return kernel.DispatchResult{Output: out, ToolError: toolErr}, nil
}

// run performs one tool call. A tool-level failure is toolErr; err is kept
// for I/O failures of chio's own state.
func (b *builtin) run(req kernel.DispatchRequest) (out json.RawMessage, toolErr string, err error) {
	switch req.Tool {
	case "echo":
		return echo(req.Arguments)
	case "issue_refund":
		return b.issueRefund(req.RequestID, req.Arguments)
	case "delete_file":
		return b.deleteFile(req.Arguments)
	default:
		return nil, fmt.Sprintf("unknown builtin tool %q", req.Tool), nil
	}
}

// recordName hashes the request id so any id maps to a safe file name.
func recordName(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return hex.EncodeToString(sum[:]) + ".json"
}

func readRecord(path string) (record, error) {
	var rec record
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("corrupt idempotency record %s: %w", path, err)
	}
	return rec, nil
}

func writeRecord(path string, rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

// recoverLedger closes the crash window between "ledger line written" and
// "idempotency record written": without it a retry after such a crash would
// refund twice. Every complete ledger line gets its record back; a torn last
// line (crash mid-append, no newline) never became a refund and is cut off.
func (b *builtin) recoverLedger(f *os.File) error {
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n != len(data) {
		if err := f.Truncate(int64(n)); err != nil {
			return err
		}
		data = data[:n]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e ledgerEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("bad ledger line %q: %w", sc.Text(), err)
		}
		path := filepath.Join(b.requests, recordName(e.RequestID))
		if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue // present (or unreadable: dispatch will report it)
		}
		out, err := refundOutput(e)
		if err != nil {
			return err
		}
		if err := writeRecord(path, record{RequestID: e.RequestID, Tool: "issue_refund", Output: out}); err != nil {
			return err
		}
	}
	return sc.Err()
}

// openLedger opens ledger.jsonl for appending (and flag) but never through
// a symbolic link (see refuseLink), which it names as the reason.
func (b *builtin) openLedger(flag int) (*os.File, error) {
	f, err := os.OpenFile(b.ledger, flag|os.O_APPEND|noFollow, 0o600)
	if err != nil {
		if lerr := refuseLink(b.ledger); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	return f, nil
}

// seedFiles are the harmless demo files delete_file starts with. etc/passwd
// exists so that a call for "/etc/passwd" has something (fake) to delete.
var seedFiles = map[string]string{
	"notes/todo.txt": "demo: buy milk\ndemo: ship chio\n",
	"tmp/cache.bin":  "demo cache bytes, safe to delete\n",
	"etc/passwd":     "# chio demo sandbox file, not a real passwd\ndemo:x:1000:1000:demo:/home/demo:/bin/sh\n",
}

// seedSandbox creates and fills the sandbox the first time only: it is built
// in a temp dir and renamed into place, so a crash never leaves it half
// seeded, and files deleted later are not re-created on restart.
func (b *builtin) seedSandbox() error {
	if _, err := os.Lstat(b.sandbox); !errors.Is(err, fs.ErrNotExist) {
		return err // exists (nil) or unusable
	}
	tmp, err := os.MkdirTemp(b.dir, ".sandbox-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	for name, content := range seedFiles {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return os.Rename(tmp, b.sandbox)
}
