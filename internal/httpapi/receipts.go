package httpapi

// The auditors' routes: receipts, stats, Merkle checkpoints and proofs, and
// the offline export. All of them need a reader or admin bearer.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
		writeJSON(w, http.StatusOK, StatsAnswer{res, timeBound(f.Since), timeBound(f.Until)})
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
	writeJSON(w, http.StatusOK, StatsAnswer{st.Result(), timeBound(f.Since), timeBound(f.Until)})
}

// StatsAnswer is GET /v1/receipts/stats' answer: the counts, and the time
// bounds they were counted for, as ReceiptPage's. A client that asks again
// about the same receipts (chio receipt stats sets the kernel's own
// auto-approvals apart with a second question) asks for these bounds: a
// duration ("1h") is counted back from chiod's clock on each request.
type StatsAnswer struct {
	receipt.StatsResult
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
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
