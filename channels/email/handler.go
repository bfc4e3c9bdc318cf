package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// MaxPostBody bounds POST /email/a/{link}.
const MaxPostBody = approval.MaxTokenBytes + 1024

// pageCSP allows the dashboard's stylesheet and nothing else.
const pageCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Kernel is what the link endpoints need from the kernel.
type Kernel interface {
	Approval(id string) (*approval.Request, error)
	Respond(ctx context.Context, approvalID string, tokenRaw []byte, outcome, channel string) (*kernel.RespondResult, error)
}

var _ Kernel = (*kernel.Kernel)(nil)

// Handler serves GET and POST /email/a/{link}; mount it at LinkPath.
func (c *Channel) Handler(k Kernel) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		link, ok := strings.CutPrefix(r.URL.Path, LinkPath)
		if !ok || link == "" || strings.Contains(link, "/") {
			httpapi.WriteError(w, httpapi.Error(http.StatusNotFound, httpapi.CodeNotFound, "no such link"))
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			c.show(w, r, k, link)
		case http.MethodPost:
			c.decide(w, r, k, link)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			httpapi.WriteError(w, httpapi.Error(http.StatusMethodNotAllowed, httpapi.CodeBadRequest, "GET shows the request, POST decides"))
		}
	})
}

// linkErr maps a link problem to the envelope: 410 spent or expired, 409
// in use, 403 anything else.
func linkErr(err error) error {
	switch {
	case errors.Is(err, errExpiredLink), errors.Is(err, errUsedLink), errors.Is(err, errVotedLink):
		return httpapi.Error(http.StatusGone, httpapi.CodeApprovalRejected, err.Error())
	case errors.Is(err, errBusyLink):
		return httpapi.Error(http.StatusConflict, httpapi.CodeConflict, err.Error())
	}
	return httpapi.Error(http.StatusForbidden, httpapi.CodeApprovalRejected, err.Error())
}

// LinkView is GET /email/a/{link}'s JSON answer.
type LinkView struct {
	Request       *approval.Request `json:"request"`
	Approver      string            `json:"approver"`
	LinkExpiresAt int64             `json:"link_expires_at"`
}

// show is read-only: it neither decides nor spends the link.
func (c *Channel) show(w http.ResponseWriter, r *http.Request, k Kernel, link string) {
	cl, _, err := c.parseLink(link)
	if err != nil {
		httpapi.WriteError(w, linkErr(err))
		return
	}
	req, err := k.Approval(cl.ApprovalID)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if !c.mayStillDecide(req, cl) {
		httpapi.WriteError(w, httpapi.Error(http.StatusForbidden, httpapi.CodeApprovalRejected,
			"this link's approver may no longer decide this request: the policy in force does not list them for it"))
		return
	}
	// Spent links are remembered in memory, which a restart forgets; the
	// vote that spends a link is durable, in the request. Once the link's
	// approver has voted (through this link or any other way), nothing is
	// left for the link to do, and it shows nothing.
	if req.HasVoted(cl.Approver) {
		httpapi.WriteError(w, linkErr(errVotedLink))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		// The arguments as the tool receives them, as chiod's answers
		// are written: not '<' rewritten as \u003c.
		httpapi.WriteJSON(w, http.StatusOK, LinkView{Request: req, Approver: cl.Approver, LinkExpiresAt: cl.Expires})
		return
	}
	v := newView(req, c.o.Now())
	v.Dashboard = "/dashboard/#email=" + url.QueryEscape(link)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	_ = pageTmpl.Execute(w, v)
}

// mayStillDecide reports whether cl's approver is still one of req's
// approvers: trusted by the request (the kernel keeps a pending request's
// trusted set to the policy in force) and listed by its grant in the
// policy in force (which a reload changes first, and which is all a
// decided request still follows), with the contact.email the link was
// mailed to, when it names one. A link reads the request only while that
// holds, as an approver session reads only while its key is in the policy
// in force: a reload that removes an approver, or moves them to another
// address, ends what the links mailed to them before show, not only what
// they may decide (the kernel refuses that).
func (c *Channel) mayStillDecide(req *approval.Request, cl linkClaims) bool {
	key := cl.Approver
	if !req.Trusts(key) {
		return false
	}
	p := c.o.Policy()
	if p == nil {
		return false
	}
	g, ok := p.Grant(req.PolicyID)
	if !ok || g.Approval == nil {
		return false
	}
	for _, ap := range g.Approval.Approvers {
		if ap.PublicKey.String() == key {
			return cl.To == "" || cl.To == addressTag(ap.Contact.Email)
		}
	}
	return false
}

// linkBody is POST /email/a/{link}'s body.
type linkBody struct {
	Token json.RawMessage `json:"token"`
}

// decide presents the approver's signed token, spending the link on success.
func (c *Channel) decide(w http.ResponseWriter, r *http.Request, k Kernel, link string) {
	cl, id, err := c.parseLink(link)
	if err != nil {
		httpapi.WriteError(w, linkErr(err))
		return
	}
	var body linkBody
	// Bound the read in time as well as in size, as the API's routes do
	// (chiod's server has no ReadTimeout: it would cut SSE streams). A
	// socket deadline is wall-clock time, not the injected clock's.
	// http.ErrNotSupported means the writer has no connection to bound
	// (httptest's recorder); any other error fails closed.
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(c.o.BodyReadTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		httpapi.WriteError(w, httpapi.Error(http.StatusServiceUnavailable, httpapi.CodeUnavailable, "cannot bound the body read"))
		return
	}
	if err := readBody(w, r, &body); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	var head struct {
		Approver  string `json:"approver"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body.Token, &head) != nil || head.Approver != cl.Approver || head.RequestID != cl.ApprovalID {
		httpapi.WriteError(w, httpapi.Error(http.StatusForbidden, httpapi.CodeApprovalRejected,
			"the token must be signed by this link's approver for this link's request"))
		return
	}
	if err := c.reserve(id, time.Unix(cl.Expires, 0)); err != nil {
		httpapi.WriteError(w, linkErr(err))
		return
	}
	res, err := k.Respond(context.WithoutCancel(r.Context()), cl.ApprovalID, body.Token, "", Name)
	if errors.Is(err, kernel.ErrVoteRecorded) {
		// The vote committed; a step after it failed. The link is spent
		// and the answer (vote_recorded) says the vote is recorded.
		c.spend(id)
		httpapi.WriteError(w, err)
		return
	}
	if err != nil {
		// Not recorded (or, if its commit was lost, refused as a replay when
		// presented again): the approver may try again.
		c.release(id)
		httpapi.WriteError(w, err)
		return
	}
	c.spend(id)
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// readBody reads a POST's body, at most MaxPostBody bytes, strictly into
// body, and says what is wrong with one it cannot take: over the limit
// (413, as chiod's API routes answer), malformed (naming the fault), or
// without a token.
func readBody(w http.ResponseWriter, r *http.Request, body *linkBody) error {
	const want = `body must be {"token": <signed approval token>}`
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPostBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return httpapi.Error(http.StatusRequestEntityTooLarge, httpapi.CodeBadRequest, fmt.Sprintf("request body larger than %d bytes", MaxPostBody))
	case err != nil:
		return httpapi.Error(http.StatusBadRequest, httpapi.CodeBadRequest, "reading body: "+err.Error())
	}
	if err := canon.Unmarshal(raw, body); err != nil {
		return httpapi.Error(http.StatusBadRequest, httpapi.CodeBadRequest, want+": "+err.Error())
	}
	if len(body.Token) == 0 || string(body.Token) == "null" {
		return httpapi.Error(http.StatusBadRequest, httpapi.CodeBadRequest, want+`: "token" is missing`)
	}
	return nil
}

var pageTmpl = htmltemplate.Must(htmltemplate.New("page").Funcs(htmltemplate.FuncMap{"stored": storedOrderHTML}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>chio · {{.Summary}}</title><link rel="stylesheet" href="/dashboard/style.css"></head>
<body><header class="topbar"><div class="brand"><span class="brand-name">chio</span><span class="brand-sub">approval request</span></div></header>
<main><article class="card kind-{{.Kind}}">
<div class="card-head"><span class="badge badge-kind">{{.Kind}}</span><span class="tool mono">{{stored .Tool}}</span><span class="spacer"></span>
<span class="deadline"><span class="muted">status </span><strong>{{.Status}}</strong></span></div>
<h3 class="summary">{{stored .Summary}}</h3>
<dl class="details">
{{if .Purpose}}<div class="detail"><dt>Purpose</dt><dd>{{stored .Purpose}}</dd></div>{{end}}
{{if .Amount}}<div class="detail amount"><dt>Amount</dt><dd>{{stored .Amount}}</dd></div>{{end}}
<div class="detail"><dt>Agent</dt><dd><code title="{{.Agent}}">{{.AgentShort}}</code></dd></div>
<div class="detail"><dt>Policy</dt><dd><code>{{.Policy}}</code></dd></div>
<div class="detail"><dt>Quorum</dt><dd>{{.Quorum}}</dd></div>
<div class="detail"><dt>Deadline</dt><dd>{{.Deadline}} ({{.Left}})</dd></div>
</dl>
{{if eq .Status "pending"}}<div class="actions"><a class="btn btn-primary" href="{{.Dashboard}}" id="open-dashboard">Review &amp; sign in the dashboard</a></div>
<p class="muted">This page decides nothing. The dashboard signs your decision with your own key, in your browser.</p>
{{else}}<p class="muted">This request is {{.Status}}; nothing is left to decide.</p>{{end}}
</article></main></body></html>
`))
