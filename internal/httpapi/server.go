package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// Config wires a Server.
type Config struct {
	Kernel     *kernel.Kernel
	Store      kernel.Store
	AdminToken string // required: admin routes never run unauthenticated
	ReadToken  string // optional reader token
	Metrics    *Metrics
	// Ready reports whether the store can commit (GET /readyz); nil means
	// always ready. Its error is logged, never sent to the client.
	Ready func() error
	// StreamWriteTimeout bounds one SSE frame's write, one export write
	// and the write of every other answer (writedeadline.go); zero means
	// StreamWriteTimeout (limits.go). Tests shorten it.
	StreamWriteTimeout time.Duration
	// MetricsPublic serves GET /metrics without a credential (for a
	// scraper on a trusted network). By default it needs the reader or
	// admin token, like every other read.
	MetricsPublic bool
}

// Server is chiod's HTTP handler.
type Server struct {
	cfg Config
	mux *http.ServeMux
	// closing ends SSE streams and long-polls at shutdown (CloseStreams).
	closing   chan struct{}
	closeOnce sync.Once
	sessions  *sessions     // approver sessions (session.go)
	waiters   slots         // long-polls per credential (calls.go)
	streams   slots         // SSE streams per credential (stream.go)
	exports   chan struct{} // GET /v1/export downloads in progress (receipts.go)
	exporters slots         // exports in progress per credential (receipts.go)
	// readyLogged is the store failure GET /readyz last logged (health.go).
	readyLogged atomic.Pointer[string]
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
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = StreamWriteTimeout
	}
	if err := cfg.Metrics.watchSubscribers(cfg.Kernel); err != nil {
		return nil, fmt.Errorf("httpapi: metrics already serve another server: %w", err)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), closing: make(chan struct{}), sessions: newSessions(),
		exports: make(chan struct{}, MaxConcurrentExports)}
	s.mux.HandleFunc("POST /v1/calls", queryless(s.postCall))
	s.registerApprovals()
	s.receiptRoutes() // receipts.go
	s.sessionRoutes() // session.go
	s.mux.HandleFunc("POST /v1/capabilities", queryless(s.requireRole(roleAdmin, s.issueCapability)))
	s.mux.HandleFunc("POST /v1/capabilities/{id}/revoke", queryless(s.requireRole(roleAdmin, s.revokeCapability)))
	s.healthRoutes() // health.go
	if cfg.MetricsPublic {
		s.mux.Handle("GET /metrics", bounded(cfg.Metrics.Handler()))
	} else {
		s.mux.Handle("GET /metrics", s.requireToken(bounded(cfg.Metrics.Handler())))
	}
	// Everything else answers in the API's error envelope, not the mux's
	// plain-text "404 page not found".
	s.mux.HandleFunc("/", s.noRoute)
	return s, nil
}

// requireToken admits the reader or admin bearer token only (no approver
// session: metrics are for operators).
func (s *Server) requireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.tokenRole(r) < roleReader {
			writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "the reader or admin bearer token is required"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// noRoute answers a request no route serves: 405 with Allow when the path
// exists for other methods, else 404. (It is registered at "/", so the
// other routes never pay for this.)
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeErr(w, apiErr(http.StatusMethodNotAllowed, CodeBadRequest,
			fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, clipID(r.URL.Path), strings.Join(allowed, ", "))))
		return
	}
	writeErr(w, apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, clipID(r.URL.Path))))
}

// Handle lets later layers (approvals, channels) add routes. Their handlers
// get the ResponseWriter net/http made, not this package's timedWriter
// (writedeadline.go): write deadlines on their own writes are theirs to
// set; WriteError sets one.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(plainWriter(w), r)
	}))
}

// WriteError answers err with SPEC §6's error envelope and status, mapped
// exactly as the API's own routes map it (channel endpoints use it).
func WriteError(w http.ResponseWriter, err error) { writeErr(w, err) }

// WriteJSON answers v as chiod's routes do (writeJSON): application/json,
// no-store, under the write deadline, without HTML escaping.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// Error builds an API error with an explicit status and code for WriteError.
func Error(status int, code, msg string) error { return apiErr(status, code, msg) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Every body is read under a deadline, every answer written under one
	// (writedeadline.go).
	r, body := boundBodyRead(w, r)
	s.mux.ServeHTTP(&timedWriter{ResponseWriter: w, timeout: s.cfg.StreamWriteTimeout, body: body}, r)
}

// readBody enforces the size limit before anything parses the body (its
// time limit is boundBodyRead's, set as the request arrived).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(plainWriter(w), r.Body, limit))
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
	if out.ApprovalRequestID != "" && out.Status != kernel.StatusPendingApproval {
		// A retry of a call a human already decided: answer as GET
		// /v1/calls/{id} does, with the approval, so that an agent learns
		// from its retry too that an approver amended its arguments (the
		// output is the amended call's).
		if st, err := s.decidedCallStatus(out); err == nil {
			writeJSON(w, StatusFor(out.Status), st)
			return
		}
	}
	writeJSON(w, StatusFor(out.Status), out)
}

// decidedCallStatus is out with its approval (callStatus), read from the
// stored record. An error leaves the caller with the bare outcome, which
// is still true: the approval is what GET /v1/calls/{id} adds.
func (s *Server) decidedCallStatus(out *kernel.Outcome) (*CallStatus, error) {
	rec, err := s.cfg.Kernel.Call(out.RequestID)
	if err != nil {
		return nil, err
	}
	if rec.Status != out.Status || rec.ApprovalID != out.ApprovalRequestID {
		return nil, errors.New("the call moved on since its outcome was read")
	}
	st, err := s.callStatus(rec)
	if err != nil {
		return nil, err
	}
	st.Outcome = *out
	return st, nil
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

// CapabilityRequest is POST /v1/capabilities' body.
type CapabilityRequest struct {
	Subject string   `json:"subject"`
	Grants  []string `json:"grants"`
	TTL     string   `json:"ttl"`             // Go duration, e.g. "24h"
	Label   string   `json:"label,omitempty"` // the agent's name, shown to approvers
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
	raw, c, err := s.cfg.Kernel.IssueLabeledCapability(subject, req.Label, req.Grants, ttl)
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
