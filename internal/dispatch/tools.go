package dispatch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// echo returns its arguments: {"echo": <arguments>}, their bytes as
// received (only insignificant space elided). Not json.Marshal: it would
// write '<', '>', '&', U+2028 and U+2029 in them as \u escapes, and echo
// is how a demo shows what a tool receives.
func echo(args json.RawMessage) (json.RawMessage, string, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	if !json.Valid(args) {
		return nil, "invalid arguments: not valid JSON", nil
	}
	out := bytes.NewBufferString(`{"echo":`)
	if err := json.Compact(out, args); err != nil { // Compact never escapes
		return nil, "", err
	}
	out.WriteByte('}')
	return out.Bytes(), "", nil
}

// decodeStrict decodes a JSON object into v, rejecting unknown fields and
// trailing data: an argument the tool silently ignores is an argument the
// guards judged but the tool did not honour.
func decodeStrict(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after arguments")
	}
	return nil
}

type refundArgs struct {
	CustomerID string   `json:"customer_id"`
	Amount     *float64 `json:"amount"` // pointer: absent is not 0
	Currency   string   `json:"currency"`
}

func (a refundArgs) validate() error {
	switch n := utf8.RuneCountInString(a.CustomerID); {
	case n == 0:
		return errors.New("customer_id must be non-empty")
	case n > 128:
		return errors.New("customer_id must be at most 128 characters")
	}
	switch {
	case a.Amount == nil:
		return errors.New("amount is required")
	case !(*a.Amount > 0):
		return errors.New("amount must be > 0")
	case *a.Amount > 1e9:
		return errors.New("amount must be <= 1e9")
	}
	if len(a.Currency) != 3 || strings.Trim(a.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return errors.New("currency must be 3 uppercase letters")
	}
	return nil
}

// ledgerEntry is one line of ledger.jsonl.
type ledgerEntry struct {
	RequestID  string  `json:"request_id"`
	CustomerID string  `json:"customer_id"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
	RefundID   string  `json:"refund_id"`
}

func refundOutput(e ledgerEntry) (json.RawMessage, error) {
	return json.Marshal(struct {
		RefundID   string  `json:"refund_id"`
		Status     string  `json:"status"`
		Amount     float64 `json:"amount"`
		Currency   string  `json:"currency"`
		CustomerID string  `json:"customer_id"`
	}{e.RefundID, "issued", e.Amount, e.Currency, e.CustomerID})
}

// issueRefund appends one fsync'd line to the ledger. The refund id derives
// from the request id, so even a replay reconstructed by recoverLedger
// reports the same id.
func (b *builtin) issueRefund(requestID string, raw json.RawMessage) (json.RawMessage, string, error) {
	var a refundArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, "invalid arguments: " + err.Error(), nil
	}
	if err := a.validate(); err != nil {
		return nil, "invalid arguments: " + err.Error(), nil
	}
	sum := sha256.Sum256([]byte(requestID))
	e := ledgerEntry{
		RequestID:  requestID,
		CustomerID: a.CustomerID,
		Amount:     *a.Amount,
		Currency:   a.Currency,
		RefundID:   "rf-" + hex.EncodeToString(sum[:8]),
	}
	line, err := json.Marshal(e)
	if err != nil {
		return nil, "", err
	}
	f, err := b.openLedger(os.O_WRONLY | os.O_CREATE)
	if err != nil {
		return nil, "", err
	}
	// One write of the whole line: O_APPEND keeps it contiguous.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return nil, "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, "", err
	}
	if err := f.Close(); err != nil {
		return nil, "", err
	}
	out, err := refundOutput(e)
	return out, "", err
}

type deleteArgs struct {
	Path string `json:"path"`
}

// deleteFile removes one file inside the sandbox. The path is always taken
// relative to the sandbox ("/etc/passwd" is sandbox/etc/passwd). Escapes are
// refused twice over: ".." components up front, and symlinks by os.Root,
// which resolves every component inside the sandbox or fails.
func (b *builtin) deleteFile(raw json.RawMessage) (json.RawMessage, string, error) {
	var a deleteArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, "invalid arguments: " + err.Error(), nil
	}
	if a.Path == "" || strings.ContainsRune(a.Path, 0) {
		return nil, "invalid arguments: path must be a non-empty string", nil
	}
	for _, c := range strings.Split(a.Path, "/") {
		if c == ".." {
			return nil, "path escapes sandbox: \"..\" is not allowed", nil
		}
	}
	rel := strings.TrimLeft(path.Clean("/"+a.Path), "/")
	if rel == "" {
		return nil, "refusing to delete the sandbox root", nil
	}
	rel = filepath.FromSlash(rel)

	root, err := os.OpenRoot(b.sandbox)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "not found", nil
	case err != nil: // e.g. a symlinked directory leading out of the sandbox
		return nil, "cannot delete: " + err.Error(), nil
	case fi.IsDir():
		return nil, "cannot delete: is a directory", nil
	case fi.Mode()&fs.ModeSymlink != 0:
		// Removing the link itself would be harmless, but a caller asking
		// to delete a link to /etc/passwd should not be told it succeeded.
		if _, err := root.Stat(rel); err != nil {
			return nil, "cannot delete: symlink resolves outside the sandbox (or nowhere)", nil
		}
	}
	if err := root.Remove(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "not found", nil
		}
		return nil, "cannot delete: " + err.Error(), nil
	}
	out, err := json.Marshal(map[string]string{"deleted": a.Path})
	return out, "", err
}
