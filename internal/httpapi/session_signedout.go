package httpapi

// Sessions ended by "Sign out everywhere" (DELETE /v1/sessions) are
// remembered until they would have expired, so that their next request is
// told so (401 signed_out_everywhere) rather than "no approver session".
// A page left open elsewhere (a shared computer) still holds the key and
// signs in again on a plain 401; on this code the dashboard forgets the key
// instead. A sign-in that presents such a session is refused with the same
// code and its cookie cleared: the browser's key is what must go, and once
// it is imported again on purpose, the next sign-in presents no cookie and
// goes through.
//
// Like sessions, the memory is per process: a restart (or another replica)
// has no session to revive either. It is bounded: each approver keeps
// their latest MaxSignedOutPerApprover, and MaxSignedOut in all; past the
// second, once expired entries are gone, a sign-out is not remembered
// (its sessions still end) and such a page signs in again as before.

import (
	"net/http"
	"time"
)

// CodeSignedOutEverywhere is the 401 code of a session ended by Sign out
// everywhere.
const CodeSignedOutEverywhere = "signed_out_everywhere"

const (
	// MaxSignedOutPerApprover is four sign-outs everywhere at the cap of
	// live sessions: one approver's repeated sign-outs forget only their
	// own oldest, never another approver's.
	MaxSignedOutPerApprover = 4 * MaxSessionsPerApprover
	MaxSignedOut            = MaxSessions
)

var errSignedOutEverywhere = apiErr(http.StatusUnauthorized, CodeSignedOutEverywhere,
	"this session was ended by Sign out everywhere: a browser that still holds the key must not sign in with it again; import your key again to sign in")

type signedOutSession struct {
	approver  string
	expiresAt time.Time
}

// signedOut is guarded by sessions.mu. byApprover lists ids oldest first.
type signedOut struct {
	ids        map[string]signedOutSession
	byApprover map[string][]string
}

func newSignedOut() signedOut {
	return signedOut{ids: map[string]signedOutSession{}, byApprover: map[string][]string{}}
}

// remember records id, a session of approver that expires at exp, as
// ended by a sign-out everywhere.
func (so *signedOut) remember(approver, id string, exp, now time.Time) {
	so.prune(approver, now)
	if mine := so.byApprover[approver]; len(mine) >= MaxSignedOutPerApprover {
		so.forget(mine[0])
	}
	if len(so.ids) >= MaxSignedOut {
		for a := range so.byApprover {
			so.prune(a, now)
		}
		if len(so.ids) >= MaxSignedOut {
			return
		}
	}
	so.ids[id] = signedOutSession{approver: approver, expiresAt: exp}
	so.byApprover[approver] = append(so.byApprover[approver], id)
}

// has reports whether id was ended by a sign-out everywhere and would
// still be live.
func (so *signedOut) has(id string, now time.Time) bool {
	e, ok := so.ids[id]
	if ok && !now.Before(e.expiresAt) {
		so.forget(id)
		return false
	}
	return ok
}

// prune forgets approver's entries past their expiry.
func (so *signedOut) prune(approver string, now time.Time) {
	for _, id := range so.byApprover[approver] {
		if !now.Before(so.ids[id].expiresAt) {
			so.forget(id)
		}
	}
}

func (so *signedOut) forget(id string) {
	e, ok := so.ids[id]
	if !ok {
		return
	}
	delete(so.ids, id)
	unlist(so.byApprover, e.approver, id)
}

func (ss *sessions) signedOutEverywhere(id string, now time.Time) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.out.has(id, now)
}

// signedOutEverywhere reports whether r presents, with no Authorization
// header, a session ended by a sign-out everywhere.
func (s *Server) signedOutEverywhere(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	id := s.presentedSession(r)
	return id != "" && len(id) <= 64 && s.sessions.signedOutEverywhere(id, s.cfg.Kernel.Clock().Now())
}
