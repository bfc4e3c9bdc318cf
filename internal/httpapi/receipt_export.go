package httpapi

// GET /v1/receipts/export: the self-contained audit file, streamed.

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/chiokernel/chio/receipt"
)

// export streams the self-contained audit file (receipt.ExportFormat). A
// checkpoint is signed first so that the file is covered up to now.
//
// A failure before any byte is sent is an ordinary error answer. A failure
// mid-stream cannot change the status any more, so the response is aborted
// (http.ErrAbortHandler): the connection is cut without the chunked body's
// final chunk (or with fewer bytes than announced), and the client's read
// of the body fails instead of ending cleanly. `chio receipt export` and
// `verify --all` then refuse the file rather than verify a truncated one.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	if !noQuery(w, r) {
		return
	}
	exp, ok := s.cfg.Store.(receipt.Exporter)
	if !ok {
		writeErr(w, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "this store cannot export"))
		return
	}
	if log, err := s.receiptLog(); err == nil {
		if _, _, err := log.Checkpoint(r.Context()); err != nil {
			writeErr(w, err)
			return
		}
	}
	// One credential's share first, so that no one token or approver
	// holds every export slot; then the slots of all. An auditor whose
	// export was cut (Ctrl-C, a dropped connection) retries at once, and
	// its old export ends only when chiod sees the connection gone (the
	// next write fails, milliseconds later): so a share that is taken is
	// waited for, briefly, before the retry is refused. A live export
	// keeps its share: the wait then ends in 429.
	cred := s.credentialOf(r)
	if !s.exporters.acquireWithin(r.Context(), s.closing, cred, MaxExportsPerCredential, ExportSlotWait) {
		writeErr(w, s.exportRefused(fmt.Sprintf("this credential already has %d export in progress, the most it may; retry when it ends", MaxExportsPerCredential)))
		return
	}
	defer s.exporters.release(cred)
	select {
	case s.exports <- struct{}{}:
		defer func() { <-s.exports }()
	default:
		writeErr(w, s.exportRefused(fmt.Sprintf("%d exports are in progress; retry when one ends", MaxConcurrentExports)))
		return
	}
	if s.shuttingDown() { // it would be cut when the shutdown's grace period ends
		writeErr(w, s.exportRefused(""))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="chio-export.jsonl"`)
	// A reader that stops reading is cut (each write has StreamWriteTimeout)
	// instead of holding its snapshot, and a pooled connection, for ever.
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	cw := &countingWriter{w: w, deadline: func(on bool) {
		if on {
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		} else {
			_ = rc.SetWriteDeadline(time.Time{}) // see sseWriter.write: HTTP/2 resets on a stale deadline
		}
	}}
	err := exp.Export(r.Context(), cw)
	switch {
	case err == nil:
	case cw.n == 0:
		w.Header().Del("Content-Disposition")
		writeErr(w, err)
	default:
		panic(http.ErrAbortHandler) // see above: the client must not see a clean end
	}
}

// exportRefused answers an export that is not served now: 429 with
// Retry-After while the slots are taken (busy says by what), as they free
// up when other exports end; but once chiod is shutting down, 503, as any
// request the kernel can no longer serve: this chiod will not serve it,
// however soon it is asked again.
func (s *Server) exportRefused(busy string) *APIError {
	if s.shuttingDown() {
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable,
			"chiod is shutting down; export again once it is back up (or from another replica)")
	}
	return retryLater(http.StatusTooManyRequests, busy, ExportRetryAfter)
}

// countingWriter counts the bytes written through it. An empty write is
// not passed on: it would send the 200 status with nothing to show for it.
type countingWriter struct {
	w        io.Writer
	n        int64
	deadline func(on bool) // if set, sets a write deadline before each write and clears it after
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.deadline != nil {
		c.deadline(true)
		defer c.deadline(false)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
