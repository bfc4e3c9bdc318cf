package httpapi

// Approver sessions (SPEC §6): an approver proves they hold a key listed in
// the policy in force by signing a single-use server challenge, and gets a
// short-lived, HttpOnly, SameSite=Strict cookie. A session is a reader: it
// may read approvals, receipts, checkpoints and the event stream, never an
// admin route. It never decides anything either: deciding still takes a
// signed approval token.
//
//	GET    /v1/session/challenge  → {challenge, expires_at}
//	POST   /v1/session            {public_key, challenge, signature} → {approver, display_name}
//	GET    /v1/session            → {approver, display_name, expires_at} of the current session
//	DELETE /v1/session            → logs out
//
// signature = Ed25519 by public_key over
// "chio.session.v1" || 0x00 || JCS({"challenge": …, "public_key": …}), 128 lowercase hex.

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// Session parameters.
const (
	SessionDomain = "chio.session.v1"
	SessionCookie = "chio_session"
	ChallengeTTL  = 60 * time.Second
	SessionTTL    = 12 * time.Hour
	// MaxSpentChallenges bounds the memory of spent challenges (each is
	// kept at most 2×ChallengeTTL: until ChallengeTTL past its expiry, see
	// session_challenge.go); past it, sign-in fails closed until some go.
	// Only a successful sign-in spends one, so only approvers can fill it.
	MaxSpentChallenges = 1 << 20
	// MaxSessions bounds live sessions in all: a backstop that only
	// MaxSessions/MaxSessionsPerApprover (625) distinct approvers signed in
	// at their cap could reach.
	MaxSessions = 10000
	// MaxSessionsPerApprover bounds one approver's live sessions. A session
	// costs its holder only a signature, so without a share one approver
	// could take every slot and lock the others out for SessionTTL. At the
	// cap, signing in again ends that approver's oldest session instead of
	// refusing: an approver is never locked out by their own old sessions,
	// and the evicted browser just signs in again (the dashboard does so on
	// 401). 16 is a few browsers and devices — the dashboard signs in on
	// every page load, but a sign-in replaces the session its browser
	// presents (start) — and twice MaxStreamsPerApprover, so every stream
	// can have its own session.
	MaxSessionsPerApprover = 16
	MaxSessionBody         = 4 << 10
	sessionRandomSize      = 32
)

type approverSession struct {
	approver  string
	expiresAt time.Time
	// ended is closed when the session ends — logout, eviction at the
	// approver's cap, expiry noticed by get or start, or its key's removal
	// from the policy (sessionByID, PolicyReloaded) — so whatever it
	// authorized that is still open (an event stream) ends with it.
	ended chan struct{}
}

// sessions holds sessions in memory: a restart logs every approver out,
// which costs them one signature. Challenges are stateless — an HMAC under a
// per-process key over their expiry and a nonce — so anonymous GETs cost no
// memory; only challenges spent by a successful sign-in are remembered,
// until they expire (session_challenge.go).
//
// live and byApprover change together, under mu, only in start and drop:
// every id in live is in its approver's list and vice versa.
type sessions struct {
	mu    sync.Mutex
	key   [32]byte
	spent spentChallenges
	live  map[string]approverSession
	// out remembers the sessions a sign-out everywhere ended
	// (session_signedout.go).
	out signedOut
	// byApprover lists each approver's live session ids, oldest first (at
	// most MaxSessionsPerApprover), so the oldest is found in O(1) and a
	// session is unlisted in O(MaxSessionsPerApprover).
	byApprover map[string][]string
}

func newSessions() *sessions {
	ss := &sessions{spent: newSpentChallenges(MaxSpentChallenges), live: map[string]approverSession{}, out: newSignedOut(), byApprover: map[string][]string{}}
	if _, err := rand.Read(ss.key[:]); err != nil {
		panic("httpapi: no randomness for session challenges: " + err.Error())
	}
	return ss
}

func randomToken() (string, error) {
	var b [sessionRandomSize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// start begins approver's session. replaces is the session id the
// signing-in browser presented ("" if none): a fresh sign-in rotates it, so
// it ends here, whoever's it was — the browser's cookie is overwritten
// anyway, and an id signed in over must not stay valid for whoever else
// may hold a copy of it. Dropping it first frees a slot of both caps, so
// the caps below cannot refuse (and then leave the browser with no
// session) nor evict another browser's session in its stead.
func (ss *sessions) start(approver string, now time.Time, replaces string) (string, time.Time, error) {
	id, err := randomToken()
	if err != nil {
		return "", time.Time{}, err
	}
	exp := now.Add(SessionTTL)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.drop(replaces)
	// This approver's share first: at the cap their oldest session ends.
	// It frees a slot of the global cap too, so an approver at their cap
	// always gets in.
	if mine := ss.byApprover[approver]; len(mine) >= MaxSessionsPerApprover {
		ss.drop(mine[0])
	}
	if len(ss.live) >= MaxSessions {
		for k, s := range ss.live {
			if !now.Before(s.expiresAt) {
				ss.drop(k)
			}
		}
		if len(ss.live) >= MaxSessions {
			return "", time.Time{}, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "too many sessions; retry later")
		}
	}
	ss.live[id] = approverSession{approver: approver, expiresAt: exp, ended: make(chan struct{})}
	ss.byApprover[approver] = append(ss.byApprover[approver], id)
	return id, exp, nil
}

// drop ends session id, if live, and unlists it from its approver's
// sessions. The caller holds mu.
func (ss *sessions) drop(id string) {
	s, ok := ss.live[id]
	if !ok {
		return
	}
	delete(ss.live, id)
	close(s.ended) // once: id is no longer live, so drop never sees it again
	unlist(ss.byApprover, s.approver, id)
}

// unlist removes id from byApprover[approver] (a fresh slice, so no
// removed id lingers in a backing array), and the entry when it empties.
func unlist(byApprover map[string][]string, approver, id string) {
	mine := byApprover[approver]
	for i, x := range mine {
		if x == id {
			mine = append(append(make([]string, 0, len(mine)-1), mine[:i]...), mine[i+1:]...)
			break
		}
	}
	if len(mine) == 0 {
		delete(byApprover, approver)
	} else {
		byApprover[approver] = mine
	}
}

// get returns session id's session. An expired, ended or evicted id is
// simply absent: the request carrying it is unauthenticated (401).
func (ss *sessions) get(id string, now time.Time) (approverSession, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.live[id]
	if ok && !now.Before(s.expiresAt) {
		ss.drop(id)
		return approverSession{}, false
	}
	return s, ok
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.drop(id)
}

// endApprover ends every session of approver, remembering them as signed
// out everywhere (session_signedout.go), and says how many.
func (ss *sessions) endApprover(approver string, now time.Time) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ids := ss.byApprover[approver]
	// drop gives the list a fresh slice (or deletes it): ids stays whole.
	for _, id := range ids {
		ss.out.remember(approver, id, ss.live[id].expiresAt, now)
		ss.drop(id)
	}
	return len(ids)
}

// endUnless ends every session of each approver keep refuses.
func (ss *sessions) endUnless(keep func(approver string) bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for approver, ids := range ss.byApprover {
		if keep(approver) {
			continue
		}
		// drop gives the approver's list a fresh slice (or deletes it),
		// so ids stays as it was while it is walked.
		for _, id := range ids {
			ss.drop(id)
		}
	}
}

// sessionRoutes registers the routes of this file.
func (s *Server) sessionRoutes() {
	s.mux.HandleFunc("GET /v1/session/challenge", queryless(s.sessionChallenge))
	s.mux.HandleFunc("POST /v1/session", queryless(sameOrigin(s.sessionLogin)))
	s.mux.HandleFunc("GET /v1/session", queryless(s.sessionInfo))
	s.mux.HandleFunc("DELETE /v1/session", queryless(sameOrigin(s.sessionLogout)))
	s.mux.HandleFunc("DELETE /v1/sessions", queryless(sameOrigin(s.sessionLogoutEverywhere)))
}

// crossOrigin is the standard library's CSRF check (Sec-Fetch-Site, else
// Origin against Host; requests with neither, from clients that are not
// browsers, pass).
var crossOrigin = http.NewCrossOriginProtection()

// sameOrigin refuses a browser's request to change sessions from a page of
// another origin. Anyone may fetch a challenge and an approver can sign
// one, so without it a page on another site could post an approver's own
// signed sign-in from a victim's browser (login CSRF: an HTML form with
// enctype text/plain carries a JSON body), and the victim's dashboard
// would be signed in as that approver. Nothing is set or ended.
func sameOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := crossOrigin.Check(r); err != nil {
			writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized,
				"session refused: sent by a page of another origin (a cross-site request); sign in from chiod's dashboard"))
			return
		}
		h(w, r)
	}
}

// SessionApprover returns the approver key of r's valid session cookie, if
// any, and only while that key is still an approver in the policy in force.
func (s *Server) SessionApprover(r *http.Request) (string, bool) {
	_, sess, ok := s.session(r)
	return sess.approver, ok
}

// session returns r's session and its id, under the same conditions as
// SessionApprover.
func (s *Server) session(r *http.Request) (string, approverSession, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 64 {
		return "", approverSession{}, false
	}
	sess, ok := s.sessionByID(c.Value)
	return c.Value, sess, ok
}

// sessionByID returns session id while it is live and its key is still an
// approver in the policy in force. Streams re-check their session with it.
func (s *Server) sessionByID(id string) (approverSession, bool) {
	sess, ok := s.sessions.get(id, s.cfg.Kernel.Clock().Now())
	if !ok {
		return approverSession{}, false
	}
	if _, ok := s.approverName(sess.approver); !ok {
		// Removed from the policy since signing in: the session ends (its
		// streams too), so putting the key back does not revive it.
		// PolicyReloaded ends the sessions not presented meanwhile.
		s.sessions.end(id)
		return approverSession{}, false
	}
	return sess, true
}

// PolicyReloaded ends, at once, every session (and so its event streams)
// whose key is no longer an approver in the policy in force. chiod calls
// it after each reload that put a new policy in force. sessionByID alone
// ends only the sessions presented while the key is out: one not presented
// then (a closed browser) and a stream sent no frame meanwhile would come
// back to life if a later reload put the key back, for whoever holds a
// copy of the cookie of someone the operator removed. A key that stays,
// whatever its display name or grants, keeps its sessions.
func (s *Server) PolicyReloaded() {
	s.sessions.endUnless(func(approver string) bool {
		_, ok := s.approverName(approver)
		return ok
	})
}

// approverName reports whether key is an approver of the policy in force,
// and its first display name.
func (s *Server) approverName(key string) (string, bool) {
	p := s.cfg.Kernel.Policy()
	for i := range p.Grants {
		if a := p.Grants[i].Approval; a != nil {
			for _, ap := range a.Approvers {
				if ap.PublicKey.String() == key {
					return ap.DisplayName, true
				}
			}
		}
	}
	return "", false
}

func (s *Server) sessionChallenge(w http.ResponseWriter, r *http.Request) {
	c, exp, err := s.sessions.issue(s.cfg.Kernel.Clock().Now())
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"challenge": c, "expires_at": exp.Unix()})
}

// SessionLogin is POST /v1/session's body.
type SessionLogin struct {
	PublicKey string `json:"public_key"`
	Challenge string `json:"challenge"`
	Signature string `json:"signature"`
}

var errSessionRefused = apiErr(http.StatusUnauthorized, CodeUnauthorized, "session refused: the challenge is unknown, used or expired, or the signature does not verify")

func (s *Server) sessionLogin(w http.ResponseWriter, r *http.Request) {
	if s.signedOutEverywhere(r) {
		// This browser's session was ended by a sign-out everywhere: it
		// is told so (the dashboard forgets its key), not signed in again.
		// Its cookie is cleared, so a sign-in after the key is imported
		// again on purpose goes through.
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r)})
		writeErr(w, errSignedOutEverywhere)
		return
	}
	var in SessionLogin
	if err := decode(w, r, MaxSessionBody, &in); err != nil {
		writeErr(w, err)
		return
	}
	now := s.cfg.Kernel.Clock().Now()
	// Everything is checked before the challenge is spent, so an attempt
	// that fails (a bad key, a bad signature, a key that is no approver)
	// costs the server nothing it remembers: anonymous clients cannot fill
	// the table of spent challenges. A challenge is spent only by the
	// sign-in it lets in, and take refuses it after that (single use).
	if in.Challenge == "" || len(in.Challenge) > 64 || !s.sessions.valid(in.Challenge, now) {
		writeErr(w, errSessionRefused)
		return
	}
	pub, err := keys.ParsePublicKey(in.PublicKey)
	if err != nil {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "public_key: "+err.Error()))
		return
	}
	sig, err := hex.DecodeString(in.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || hex.EncodeToString(sig) != in.Signature {
		writeErr(w, apiErr(http.StatusBadRequest, CodeBadRequest, "signature must be 128 lowercase hex digits"))
		return
	}
	payload, err := canon.Marshal(map[string]string{"challenge": in.Challenge, "public_key": in.PublicKey})
	if err != nil {
		writeErr(w, err)
		return
	}
	if !ed25519.Verify(pub.Ed25519(), signed.Message(SessionDomain, payload), sig) {
		writeErr(w, errSessionRefused)
		return
	}
	name, ok := s.approverName(pub.String())
	if !ok {
		writeErr(w, apiErr(http.StatusForbidden, CodeApprovalRejected, "this key is not an approver in the policy in force"))
		return
	}
	if !s.sessions.take(in.Challenge, now) {
		writeErr(w, errSessionRefused) // replayed, or the spent table is full
		return
	}
	id, exp, err := s.sessions.start(pub.String(), now, s.presentedSession(r))
	if err != nil {
		writeErr(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r),
	})
	writeJSON(w, http.StatusOK, map[string]any{"approver": pub.String(), "display_name": name, "expires_at": exp.Unix()})
}

// ownSession returns r's live approver session, or answers 401 and reports
// false. A wrong bearer token is refused here as on every other route
// (auth.go never lets a session stand in beside one), not ignored for the
// cookie.
func (s *Server) ownSession(w http.ResponseWriter, r *http.Request) (approverSession, bool) {
	if r.Header.Get("Authorization") != "" && s.tokenRole(r) == roleNone {
		writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "the Authorization header holds no valid bearer token"))
		return approverSession{}, false
	}
	_, sess, ok := s.session(r)
	if !ok && s.signedOutEverywhere(r) {
		writeErr(w, errSignedOutEverywhere)
	} else if !ok {
		writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "no approver session"))
	}
	return sess, ok
}

func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.ownSession(w, r)
	if !ok {
		return
	}
	name, _ := s.approverName(sess.approver)
	writeJSON(w, http.StatusOK, map[string]any{"approver": sess.approver, "display_name": name, "expires_at": sess.expiresAt.Unix()})
}

// presentedSession is the session id r's cookie carries, live or not, ""
// if none.
func (s *Server) presentedSession(r *http.Request) string {
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value
	}
	return ""
}

func (s *Server) sessionLogout(w http.ResponseWriter, r *http.Request) {
	s.sessions.end(s.presentedSession(r))
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r)})
	writeJSON(w, http.StatusOK, map[string]any{"logged_out": true})
}

// sessionLogoutEverywhere signs the presented session's approver out of
// every browser (their sessions' event streams end too). It needs a live
// session: a bearer token, even the admin's, names no approver here (an
// operator removes a key from the policy instead, which ends its sessions).
func (s *Server) sessionLogoutEverywhere(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.ownSession(w, r)
	if !ok {
		return
	}
	n := s.sessions.endApprover(sess.approver, s.cfg.Kernel.Clock().Now())
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r)})
	writeJSON(w, http.StatusOK, map[string]any{"logged_out": true, "sessions_ended": n})
}

// secureCookie: Secure when this request is TLS, or when chiod is published
// over HTTPS behind a TLS-terminating proxy. A URL's scheme is
// case-insensitive and the policy accepts "HTTPS://…", so it is compared
// as url.Parse reads it (lowercased), not by its spelling.
func (s *Server) secureCookie(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	u, err := url.Parse(s.cfg.Kernel.Policy().Kernel.PublicURL)
	return err == nil && u.Scheme == "https"
}
