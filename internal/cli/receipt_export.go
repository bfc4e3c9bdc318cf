package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chiokernel/chio/receipt"
)

func init() {
	register("receipt export", "write every receipt, checkpoint and approval token to --out FILE (JSON Lines) for offline verification", runReceiptExport)
}

func runReceiptExport(e *Env, args []string) int {
	// Caught from the start, so that Ctrl-C ends the export through the
	// clean-up below (the temporary file removed) instead of killing the
	// process and leaving it behind.
	sigCtx, stopSignals := onInterrupt()
	defer stopSignals()
	fs := newFlags(e, "receipt export")
	r := addRemote(fs, e)
	out := fs.String("out", "", "file to write (JSON Lines)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("receipt export", pos, 0); err != nil {
		return fail(e, err)
	}
	if *out == "" {
		return fail(e, usageErr("receipt export", "--out FILE is required"))
	}
	ctx, cancel := context.WithTimeout(sigCtx, time.Hour)
	defer cancel()
	body, err := r.stream(ctx, "/v1/export")
	if in, ok := interruption(sigCtx); ok {
		if body != nil {
			body.Close()
		}
		return exportInterrupted(e, in, *out)
	}
	if err != nil {
		return fail(e, err)
	}
	defer body.Close()
	// Write beside the target and rename once complete, so an interrupted
	// export never leaves a file that looks whole.
	tmp, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*")
	if err != nil {
		return fail(e, err)
	}
	defer os.Remove(tmp.Name())
	head, lines, err := copyLines(tmp, body)
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if in, ok := interruption(sigCtx); ok {
		return exportInterrupted(e, in, *out) // the deferred Remove drops the part written
	}
	if err == nil {
		err = os.Rename(tmp.Name(), *out)
	}
	if err != nil {
		return fail(e, fmt.Errorf("export: %w", err))
	}
	fmt.Fprintf(e.Stdout, "wrote %d lines (%d receipts) to %s\n", lines, head.Receipts, *out)
	// The header's kernel_key is chiod's unsigned word: shown escaped, so
	// that no escape sequence in it can rewrite the advice around it.
	fmt.Fprintf(e.Stderr, "verify offline with: chio receipt verify --file %s --kernel-key KEY\n"+
		"(the file names kernel key %s; take KEY from a source you trust, not from the file)\n", *out, shown(head.KernelKey))
	return ExitOK
}

// exportInterrupted reports an export stopped by a signal: nothing is
// renamed into place, so out is as it was.
func exportInterrupted(e *Env, in interrupted, out string) int {
	fmt.Fprintf(e.Stderr, "chio: %s: the export stopped; nothing written to %s\n", in, out)
	return in.exitCode()
}

// copyLines copies the export and reads its header on the way. The
// header's receipt count is not signed: the command reports it only if
// the file holds that many receipt lines, and refuses the export otherwise
// (chiod announces N and writes seq 1..N: a file that disagrees was cut or
// edited on its way, or chiod's answer is not whole).
func copyLines(w io.Writer, r io.Reader) (receipt.ExportHeader, int, error) {
	var head receipt.ExportHeader
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	var receipts uint64
	lineStart := true
	for {
		line, err := br.ReadSlice('\n')
		if lineStart && n > 0 && receipt.IsReceiptLine(line) {
			receipts++
		}
		lineStart = err != bufio.ErrBufferFull
		if err == bufio.ErrBufferFull { // a long line: copy it in pieces
			if _, werr := bw.Write(line); werr != nil {
				return head, n, werr
			}
			continue
		}
		if len(line) > 0 {
			if n == 0 && json.Unmarshal(line, &head) != nil {
				return head, n, fmt.Errorf("the server's answer is not an export")
			}
			if _, werr := bw.Write(line); werr != nil {
				return head, n, werr
			}
			n++
		}
		if err == io.EOF {
			if head.Format != receipt.ExportFormat {
				return head, n, fmt.Errorf("the server's answer is not a %s export", receipt.ExportFormat)
			}
			if receipts != head.Receipts {
				return head, n, fmt.Errorf("the server's export is not whole: its header announces %d receipts, it holds %d receipts", head.Receipts, receipts)
			}
			return head, n, bw.Flush()
		}
		if err != nil {
			return head, n, err
		}
	}
}

// stream GETs path with the reader/admin token and returns the body of a
// 200 answer for the caller to read (and close).
func (r *remote) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", r.base()+path, nil)
	if err != nil {
		return nil, err
	}
	if t := r.e.Getenv("CHIO_ADMIN_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	} else if t := r.e.Getenv("CHIO_READ_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach chiod at %s: %w", r.base(), err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae := &apiError{Status: resp.StatusCode}
	envelope := json.Unmarshal(data, ae) == nil && ae.Code != ""
	if !envelope {
		ae.Code, ae.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if !envelope {
			ae.Message = "" // a proxy's page, not chiod's words: not worth a screenful
		}
		return nil, &refusedForNow{path, ae, retryDelay(resp.Header.Get("Retry-After"), time.Now())}
	}
	return nil, ae
}

// refusedForNow is a 429 answer: chiod (or a proxy before it) will serve
// the request later, not now — for an export, most often because another
// export of the same token is in progress (chiod serves one per token).
type refusedForNow struct {
	path  string
	ae    *apiError
	after time.Duration // from Retry-After; 0 if it gave none
}

func (r *refusedForNow) Error() string {
	msg := "chiod refused " + r.path + " for now (429)"
	if r.ae.Message != "" {
		msg += ": " + strings.TrimSuffix(r.ae.Message, ".")
	}
	if r.after > 0 {
		return fmt.Sprintf("%s; try again in %s", msg, r.after)
	}
	return msg + "; try again later"
}

func (r *refusedForNow) Unwrap() error { return r.ae }

// maxRetryDelay caps what retryDelay reports: a larger Retry-After (which
// would overflow a time.Duration) is read as this.
const maxRetryDelay = 24 * time.Hour

// retryDelay reads a Retry-After header: seconds, or an HTTP date (from
// now). 0 when absent or unreadable; at most maxRetryDelay.
func retryDelay(h string, now time.Time) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n > 0 {
		if n > int(maxRetryDelay/time.Second) {
			return maxRetryDelay
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now).Round(time.Second), maxRetryDelay)
	}
	return 0
}
