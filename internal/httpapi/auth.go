package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// role is what a request's bearer token entitles it to.
type role int

const (
	roleNone role = iota
	roleReader
	roleAdmin
)

// bearerRole compares the presented token against the configured ones in
// constant time. An unset token never matches (no empty-token bypass).
// Without an Authorization header, a valid approver session (session.go)
// counts as a reader, never more: sessions never reach admin routes.
func (s *Server) bearerRole(r *http.Request) role {
	return s.role(r, true)
}

// tokenRole is bearerRole without approver sessions: for routes SPEC §6
// reserves to tokens (a call's status and output belong to its agent and
// to operators, not to every approver).
func (s *Server) tokenRole(r *http.Request) role {
	return s.role(r, false)
}

func (s *Server) role(r *http.Request, sessions bool) role {
	h := r.Header.Get("Authorization")
	if h == "" {
		if _, ok := s.SessionApprover(r); ok && sessions {
			return roleReader
		}
		return roleNone
	}
	// The scheme is case-insensitive (RFC 9110 §11.1); the token is exact.
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return roleNone
	}
	if s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) == 1 {
		return roleAdmin
	}
	if s.cfg.ReadToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.ReadToken)) == 1 {
		return roleReader
	}
	return roleNone
}

// credentialOf names the credential r holds, for the shares of what one
// credential may hold open: each bearer token is one, and an approver is
// one however many sessions they sign in. "" when r holds none (the
// routes that count shares have refused it already, in requireRole).
func (s *Server) credentialOf(r *http.Request) string {
	switch s.tokenRole(r) {
	case roleAdmin:
		return "token:admin"
	case roleReader:
		return "token:reader"
	}
	if approver, ok := s.SessionApprover(r); ok {
		return "approver:" + approver
	}
	return ""
}

// requireRole wraps h so it runs only for at least min.
func (s *Server) requireRole(min role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if got := s.bearerRole(r); got < min {
			if got == roleNone && min == roleReader && s.signedOutEverywhere(r) {
				writeErr(w, errSignedOutEverywhere)
				return
			}
			writeErr(w, s.refusal(w, got, min))
			return
		}
		h(w, r)
	}
}

// refusal says why a credential of role got is not enough for min. A
// valid reader token or approver session on an admin route is told that
// the admin token is needed, not that it is wrong, and the answer carries
// RFC 6750's WWW-Authenticate error="insufficient_scope", which clients
// (the CLI) read to say the same.
func (s *Server) refusal(w http.ResponseWriter, got, min role) error {
	if got >= roleReader && min == roleAdmin {
		w.Header().Set("WWW-Authenticate", InsufficientScope)
		return apiErr(http.StatusUnauthorized, CodeUnauthorized,
			"the admin token is required: the credential sent (a reader token or session) may only read")
	}
	if min == roleAdmin {
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, "the admin token is required")
	}
	return apiErr(http.StatusUnauthorized, CodeUnauthorized, "a valid bearer token or approver session is required")
}

// InsufficientScope is the WWW-Authenticate challenge sent with a valid
// credential that may not do what it asked (RFC 6750 §3.1).
const InsufficientScope = `Bearer error="insufficient_scope"`
