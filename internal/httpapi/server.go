package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Config wires a Server.
type Config struct {
	Kernel     *kernel.Kernel
	Store      kernel.Store
	AdminToken string // required: admin routes never run unauthenticated
	ReadToken  string // optional reader token
	Metrics    *Metrics
}

// Server is chiod's HTTP handler.
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New builds the handler with every route of SPEC §6 this build serves.
func New(cfg Config) (*Server, error) {
	if cfg.Kernel == nil || cfg.Store == nil {
		return nil, errors.New("httpapi: Kernel and Store are required")
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("httpapi: an admin token is required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/calls", s.postCall)
	s.mux.HandleFunc("GET /v1/calls/{id}", s.requireRole(roleReader, s.getCall))
	s.mux.HandleFunc("GET /v1/receipts", s.requireRole(roleReader, s.listReceipts))
	s.mux.HandleFunc("GET /v1/receipts/{id}", s.requireRole(roleReader, s.getReceipt))
	s.mux.HandleFunc("POST /v1/capabilities", s.requireRole(roleAdmin, s.issueCapability))
	s.mux.HandleFunc("POST /v1/capabilities/{id}/revoke", s.requireRole(roleAdmin, s.revokeCapability))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "kernel_key": cfg.Kernel.PublicKey().String()})
	})
	s.mux.Handle("GET /metrics", cfg.Metrics.Handler())
	return s, nil
}

// Handle lets later layers (approvals, channels) add routes.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// readBody enforces the size limit before anything parses the body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apiErr(http.StatusRequestEntityTooLarge, CodeBadRequest, "request body larger than "+strconv.FormatInt(limit, 10)+" bytes")
		}
		return nil, apiErr(http.StatusBadRequest, CodeBadRequest, "reading body: "+err.Error())
	}
	return body, nil
}

// decode reads a size-limited, strictly valid JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := readBody(w, r, limit)
	if err != nil {
		return err
	}
	if err := canon.Unmarshal(body, v); err != nil {
		return apiErr(http.StatusBadRequest, CodeBadRequest, err.Error())
	}
	return nil
}

func (s *Server) postCall(w http.ResponseWriter, r *http.Request) {
	var call kernel.ToolCall
	if err := decode(w, r, MaxCallBody, &call); err != nil {
		writeErr(w, err)
		return
	}
	out, err := s.cfg.Kernel.Submit(r.Context(), &call)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, StatusFor(out.Status), out)
}

// StatusFor maps an outcome status to its HTTP status (SPEC §6).
func StatusFor(status string) int {
	switch status {
	case kernel.StatusAllowed:
		return http.StatusOK
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		return http.StatusAccepted
	case kernel.StatusDenied, kernel.StatusCancelled:
		return http.StatusForbidden
	}
	return http.StatusOK
}

func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	var rec *kernel.CallRecord
	err := s.cfg.Store.View(func(tx kernel.ReadTx) error {
		var err error
		rec, err = tx.Call(r.PathValue("id"))
		return err
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, kernel.OutcomeOf(rec))
}

func (s *Server) getReceipt(w http.ResponseWriter, r *http.Request) {
	var raw []byte
	err := s.cfg.Store.View(func(tx kernel.ReadTx) error {
		var err error
		raw, err = tx.Receipt(r.PathValue("id"))
		raw = bytes.Clone(raw) // bbolt memory is valid only inside the tx
		return err
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(raw) // the stored, signed bytes exactly
}

// ReceiptPage is GET /v1/receipts' answer. Receipts are the stored bytes.
type ReceiptPage struct {
	Receipts   []json.RawMessage `json:"receipts"`
	Count      int               `json:"count"`
	NextCursor string            `json:"next_cursor,omitempty"`
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
	q := r.URL.Query()
	f, err := FilterFromQuery(q, s.cfg.Kernel.Clock().Now())
	if err != nil {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, err.Error()))
		return
	}
	limit := DefaultListLimit
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxListLimit {
			writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "limit must be 1.."+strconv.Itoa(MaxListLimit)))
			return
		}
	}
	var from uint64 = 1
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseUint(c, 10, 64)
		if err != nil {
			writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "bad cursor"))
			return
		}
		from = n + 1
	}
	page := ReceiptPage{Receipts: []json.RawMessage{}}
	var parseErr error
	err = s.cfg.Store.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(from, tx.LastSeq(), func(seq uint64, raw []byte) bool {
			rc, err := receipt.Parse(raw)
			if err != nil {
				parseErr = err // a stored receipt that does not parse is corruption: say so
				return false
			}
			if !f.Match(rc) {
				return true
			}
			if len(page.Receipts) == limit {
				page.NextCursor = strconv.FormatUint(seq-1, 10)
				return false
			}
			page.Receipts = append(page.Receipts, bytes.Clone(raw))
			return true
		})
	})
	if err == nil {
		err = parseErr
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	page.Count = len(page.Receipts)
	writeJSON(w, http.StatusOK, page)
}

// CapabilityRequest is POST /v1/capabilities' body.
type CapabilityRequest struct {
	Subject string   `json:"subject"`
	Grants  []string `json:"grants"`
	TTL     string   `json:"ttl"` // Go duration, e.g. "24h"
}

func (s *Server) issueCapability(w http.ResponseWriter, r *http.Request) {
	var req CapabilityRequest
	if err := decode(w, r, MaxAdminBody, &req); err != nil {
		writeErr(w, err)
		return
	}
	subject, err := keys.ParsePublicKey(req.Subject)
	if err != nil {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "subject: "+err.Error()))
		return
	}
	ttl, err := time.ParseDuration(strings.TrimSpace(req.TTL))
	if err != nil {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "ttl: "+err.Error()))
		return
	}
	raw, c, err := s.cfg.Kernel.IssueCapability(subject, req.Grants, ttl)
	if err != nil {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, err.Error()))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": c.ID, "capability": json.RawMessage(raw)})
}

func (s *Server) revokeCapability(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.cfg.Kernel.Revoke(r.Context(), id); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}
