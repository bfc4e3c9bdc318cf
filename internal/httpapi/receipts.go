package httpapi

// The auditors' routes: receipts, stats, Merkle checkpoints and proofs, and
// the offline export. All of them need a reader or admin bearer.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// receiptRoutes registers every route of this file.
func (s *Server) receiptRoutes() {
	read := func(h http.HandlerFunc) http.HandlerFunc { return s.requireRole(roleReader, h) }
	s.mux.HandleFunc("GET /v1/receipts", read(s.listReceipts))
	s.mux.HandleFunc("GET /v1/receipts/stats", read(s.receiptStats))
	s.mux.HandleFunc("GET /v1/receipts/{id}", read(s.getReceipt))
	s.mux.HandleFunc("GET /v1/receipts/{id}/proof", read(s.receiptProof))
	s.mux.HandleFunc("GET /v1/checkpoints/latest", read(s.latestCheckpoint))
	s.mux.HandleFunc("GET /v1/checkpoints/consistency", read(s.consistencyProof))
	s.mux.HandleFunc("GET /v1/checkpoints", read(s.checkpointAt))
	s.mux.HandleFunc("GET /v1/export", read(s.export))
}

func writeRaw(w http.ResponseWriter, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	boundWrite(w)
	w.Write(raw) // the stored, signed bytes exactly
}

func badRequest(msg string) error { return apiErr(http.StatusBadRequest, CodeBadRequest, msg) }

// index is the store's query index, or a full scan for stores without one.
func (s *Server) index() receipt.Index {
	if ix, ok := s.cfg.Store.(receipt.Index); ok {
		return ix
	}
	return scanIndex{s.cfg.Store}
}

// receiptLog is the store's Merkle log; without one, checkpoint routes
// answer 503 rather than pretend.
func (s *Server) receiptLog() (*receipt.Log, error) {
	if l, ok := s.cfg.Store.(interface{ ReceiptLog() *receipt.Log }); ok && l.ReceiptLog() != nil {
		return l.ReceiptLog(), nil
	}
	return nil, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "this store keeps no Merkle log")
}

func (s *Server) getReceipt(w http.ResponseWriter, r *http.Request) {
	if !noQuery(w, r) {
		return
	}
	raw, err := s.storedReceipt(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRaw(w, raw)
}

func (s *Server) storedReceipt(id string) ([]byte, error) {
	var raw []byte
	err := s.cfg.Store.View(func(tx kernel.ReadTx) error {
		v, err := tx.Receipt(id)
		raw = bytes.Clone(v) // bbolt memory is valid only inside the tx
		return err
	})
	return raw, notFoundAs(err, "receipt", id)
}

// ReceiptPage is GET /v1/receipts' answer. Receipts are the stored bytes;
// next_cursor is the last seq of this page (pass it back as cursor).
// Since and Until are the time bounds the page was read with, as RFC 3339
// times to the millisecond: a bound asked as a duration ("1h") is counted
// back from chiod's clock on each request, so a client paging a long
// listing asks its later pages for these, or its window slides.
type ReceiptPage struct {
	Receipts   []json.RawMessage `json:"receipts"`
	Count      int               `json:"count"`
	NextCursor string            `json:"next_cursor,omitempty"`
	Since      string            `json:"since,omitempty"`
	Until      string            `json:"until,omitempty"`
}

// timeBound is a filter's bound in milliseconds as an RFC 3339 time that
// ParseTimeBound reads back to the same millisecond; "" for no bound.
func timeBound(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// FilterFromQuery parses the list filters shared by HTTP and the CLI.
func FilterFromQuery(q map[string][]string, now time.Time) (receipt.Filter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	f := receipt.Filter{Decision: get("decision"), Guard: get("guard"), Server: get("server"),
		Tool: get("tool"), Subject: get("subject"), RequestID: get("request_id")}
	var err error
	if f.Since, err = receipt.ParseTimeBound(get("since"), now); err != nil {
		return f, err
	}
	if u := get("until"); u != "" {
		if f.Until, err = receipt.ParseTimeBound(u, now); err != nil {
			return f, err
		}
		// Until 0 is the filter's "no bound": a bound at (or, within its
		// first millisecond, just after) the epoch listed every receipt.
		// No receipt precedes it, and none before it is a query to answer.
		if f.Until <= 0 {
			return f, fmt.Errorf("time bound %q: until must be 1970-01-01T00:00:00.001Z or later (no receipt is older)", u)
		}
	}
	// Bounds swapped or equal select no time at all: most likely a typo,
	// which answered "0 receipts" as if nothing had happened then.
	if f.Since != 0 && f.Until != 0 && f.Since >= f.Until {
		return f, fmt.Errorf("time range since %q until %q is empty: since must be before until", get("since"), get("until"))
	}
	for _, m := range q["meta"] {
		mf, err := receipt.ParseMeta(m)
		if err != nil {
			return f, err
		}
		f.Meta = append(f.Meta, mf)
	}
	switch f.Decision {
	case "", receipt.Allow, receipt.Deny, receipt.Cancelled, receipt.Incomplete:
	default:
		return f, errors.New("decision must be allow, deny, cancelled or incomplete")
	}
	return f, nil
}

func (s *Server) listReceipts(w http.ResponseWriter, r *http.Request) {
	q, err := strictQuery(r, append(slices.Clone(filterParams), "limit", "order", "cursor"), "meta")
	if err != nil {
		writeErr(w, err)
		return
	}
	f, err := FilterFromQuery(q, s.cfg.Kernel.Clock().Now())
	if err != nil {
		writeErr(w, badRequest(err.Error()))
		return
	}
	limit := DefaultListLimit
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxListLimit {
			writeErr(w, badRequest("limit must be 1.."+strconv.Itoa(MaxListLimit)))
			return
		}
	}
	query := receipt.Query{Filter: f}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		query.Desc = true
	default:
		writeErr(w, badRequest("order must be asc or desc"))
		return
	}
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseUint(c, 10, 64)
		if err != nil || n == 0 && query.Desc {
			writeErr(w, badRequest("bad cursor"))
			return
		}
		if query.Desc {
			query.Before = n
		} else {
			query.After = n
		}
	}
	page := ReceiptPage{Receipts: []json.RawMessage{}, Since: timeBound(f.Since), Until: timeBound(f.Until)}
	var last uint64
	err = s.index().QueryReceipts(query, func(seq uint64, raw []byte, _ *receipt.Receipt) bool {
		if len(page.Receipts) == limit {
			page.NextCursor = strconv.FormatUint(last, 10) // there is more
			return false
		}
		page.Receipts = append(page.Receipts, bytes.Clone(raw))
		last = seq
		return r.Context().Err() == nil
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	page.Count = len(page.Receipts)
	writeJSON(w, http.StatusOK, page)
}

// receiptStats answers GET /v1/receipts/stats?<list filters>&group_by=FIELD.
func (s *Server) receiptStats(w http.ResponseWriter, r *http.Request) {
	q, err := strictQuery(r, append(slices.Clone(filterParams), "group_by"), "meta")
	if err != nil {
		writeErr(w, err)
		return
	}
	f, err := FilterFromQuery(q, s.cfg.Kernel.Clock().Now())
	if err != nil {
		writeErr(w, badRequest(err.Error()))
		return
	}
	groupBy := q.Get("group_by")
	st, err := receipt.NewStats(groupBy)
	if err != nil {
		writeErr(w, badRequest(err.Error()))
		return
	}
	if six, ok := s.cfg.Store.(receipt.StatsIndex); ok {
		res, err := six.ReceiptStats(f, groupBy)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	err = s.index().QueryReceipts(receipt.Query{Filter: f, Decode: true}, func(_ uint64, _ []byte, rc *receipt.Receipt) bool {
		st.Add(rc)
		return r.Context().Err() == nil
	})
	if err == nil {
		err = r.Context().Err()
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st.Result())
}

// ProofResponse is GET /v1/receipts/{id}/proof's answer: the receipt and
// the checkpoint as stored, and the receipt's inclusion proof under it.
type ProofResponse struct {
	Receipt    json.RawMessage        `json:"receipt"`
	Checkpoint json.RawMessage        `json:"checkpoint"`
	Proof      receipt.InclusionProof `json:"proof"`
}

func (s *Server) receiptProof(w http.ResponseWriter, r *http.Request) {
	if !noQuery(w, r) {
		return
	}
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	raw, err := s.storedReceipt(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rc, err := receipt.Decode(raw)
	if err != nil {
		writeErr(w, err)
		return
	}
	// A receipt newer than the latest checkpoint gets a fresh one.
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	cpRaw, cp, err := log.Cover(ctx, rc.Seq)
	if err != nil {
		writeErr(w, err)
		return
	}
	proof, err := log.Prove(rc.Seq, raw, cp)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ProofResponse{Receipt: raw, Checkpoint: cpRaw, Proof: proof})
}

// latestCheckpoint answers GET /v1/checkpoints/latest with a checkpoint
// covering every receipt committed before the request: one is signed first
// if the log grew since the latest (as for an export or a proof). An
// auditor pins it before taking an export, which must then reach it; a
// checkpoint up to an hour old would leave the newest receipts unanchored.
func (s *Server) latestCheckpoint(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	// It takes no parameter: ?size=N belongs to /v1/checkpoints, and
	// answering it here with the newest checkpoint would mislead.
	if _, err := strictQuery(r, nil); err != nil {
		writeErr(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	raw, _, err := log.Checkpoint(ctx)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRaw(w, raw)
}

// checkpointAt answers GET /v1/checkpoints?size=N: the checkpoint signed at
// exactly that tree size, if one was.
func (s *Server) checkpointAt(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	q, err := strictQuery(r, []string{"size"})
	if err != nil {
		writeErr(w, err)
		return
	}
	size, err := strconv.ParseUint(q.Get("size"), 10, 64)
	if err != nil {
		writeErr(w, badRequest("size=N is required (see /v1/checkpoints/latest for the newest)"))
		return
	}
	raw, err := log.CheckpointAt(size)
	if err == nil && raw == nil {
		err = apiErr(http.StatusNotFound, CodeNotFound, "no checkpoint was signed at tree_size "+strconv.FormatUint(size, 10))
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRaw(w, raw)
}

// consistencyProof answers GET /v1/checkpoints/consistency?from=N&to=M.
func (s *Server) consistencyProof(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	q, err := strictQuery(r, []string{"from", "to"})
	if err != nil {
		writeErr(w, err)
		return
	}
	from, err1 := strconv.ParseUint(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseUint(q.Get("to"), 10, 64)
	if err1 != nil || err2 != nil || from > to {
		writeErr(w, badRequest("from=N&to=M with N ≤ M are required"))
		return
	}
	p, err := log.Consistency(from, to)
	if errors.Is(err, receipt.ErrNotInLog) {
		err = apiErr(http.StatusNotFound, CodeNotFound, err.Error())
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

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

// scanIndex answers queries by reading every receipt: the fallback for a
// store without indexes.
type scanIndex struct{ store kernel.Store }

func (x scanIndex) QueryReceipts(q receipt.Query, fn func(uint64, []byte, *receipt.Receipt) bool) error {
	return x.store.View(func(tx kernel.ReadTx) error {
		lo, hi := q.After+1, tx.LastSeq()
		if q.Before > 0 {
			hi = min(hi, q.Before-1)
		}
		var perr error
		visit := func(seq uint64, raw []byte) bool {
			rc, err := receipt.Parse(raw)
			if err != nil {
				perr = err // a stored receipt that does not parse is corruption: say so
				return false
			}
			return !q.Filter.Match(rc) || fn(seq, raw, rc)
		}
		if !q.Desc {
			if err := tx.Receipts(lo, hi, visit); err != nil {
				return err
			}
			return perr
		}
		for top := hi; top >= lo && top > 0; {
			bottom := max(lo, top-min(top-1, 1023))
			type hit struct {
				seq uint64
				raw []byte
			}
			var window []hit
			tx.Receipts(bottom, top, func(seq uint64, raw []byte) bool { window = append(window, hit{seq, raw}); return true })
			for i := len(window) - 1; i >= 0; i-- {
				if !visit(window[i].seq, window[i].raw) {
					return perr
				}
			}
			top = bottom - 1
		}
		return perr
	})
}
