// Package dashboard is the web dashboard channel: a single page served by
// chiod at /dashboard/, every asset embedded in the binary (no CDN), under a
// strict Content-Security-Policy.
//
// The page holds no authority of its own. It reads through the approver
// session of SPEC §6 (GET /v1/session/challenge, POST /v1/session: the
// approver signs a challenge with their key), follows GET /approvals/stream,
// and decides only by POSTing a GovernedApprovalToken that the browser
// signed with WebCrypto Ed25519 to /approvals/{id}/respond. The approver's
// private key is imported (PKCS#8 PEM) or generated in the browser, kept in
// IndexedDB as a non-extractable CryptoKey, and never leaves the browser.
//
// Deep links: /dashboard/#request=ar-… shows and highlights one request
// (Slack's "Review & sign" link), read on its own when the stream's replay
// does not hold it, or says it is no longer pending; /dashboard/#email=LINK signs for an email link
// (channels/email) and posts the token to /email/a/LINK instead.
//
// WebCrypto only works in a secure context: serve chiod on localhost or
// with TLS (tls_cert_file / tls_key_file).
package dashboard

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is where chiod serves the dashboard.
const Prefix = "/dashboard/"

// CSP is the page's Content-Security-Policy: nothing but this origin, no
// inline script or style, no framing, no form posts elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

//go:embed assets
var assets embed.FS

// Options configure the handler.
type Options struct {
	// Prefix is the path the handler is mounted at (default "/dashboard/").
	Prefix string
}

// New returns the dashboard's handler. Mount it with
// mux.Handle(dashboard.Prefix, h); a request for the prefix without its
// trailing slash is redirected.
func New(o Options) (http.Handler, error) {
	if o.Prefix == "" {
		o.Prefix = Prefix
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return nil, errors.New("dashboard: Prefix must start and end with /")
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return nil, err
	}
	return &handler{prefix: o.Prefix, files: sub}, nil
}

type handler struct {
	prefix string
	files  fs.FS
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path+"/" == h.prefix {
		http.Redirect(w, r, h.prefix, http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, h.prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == "" {
		name = "index.html"
	}
	name = path.Clean(name)
	ctype, known := contentTypes[path.Ext(name)]
	data, err := fs.ReadFile(h.files, name)
	if !known || err != nil || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	// Assets change with the binary: revalidate, never serve a stale app.
	hd.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(data)
	}
}
