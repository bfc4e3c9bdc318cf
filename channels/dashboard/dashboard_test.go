package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/dashboard/", 200, "text/html; charset=utf-8"},
		{"GET", "/dashboard/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/signing.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/cards.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/cardlist.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/history.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/signedout.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/visible.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/strictjson.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/canonorder.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/entries.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/style.css", 200, "text/css; charset=utf-8"},
		{"GET", "/dashboard/favicon.svg", 200, "image/svg+xml"},
		{"GET", "/dashboard", 301, ""},
		{"GET", "/dashboard/missing.js", 404, ""},
		{"GET", "/dashboard/../go.mod", 404, ""},
		{"POST", "/dashboard/", 405, ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.status {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.status)
		}
		if c.status == 200 {
			if got := rec.Header().Get("Content-Type"); got != c.ctype {
				t.Fatalf("%s: Content-Type %q", c.path, got)
			}
			if rec.Header().Get("Content-Security-Policy") != CSP || rec.Header().Get("X-Frame-Options") != "DENY" {
				t.Fatalf("%s: security headers %v", c.path, rec.Header())
			}
		}
	}
}

// Every asset is served from the binary: no page may reach another origin.
func TestNoExternalAssets(t *testing.T) {
	h, _ := New(Options{})
	for _, p := range []string{"/dashboard/", "/dashboard/app.js", "/dashboard/signing.js", "/dashboard/cards.js", "/dashboard/cardlist.js", "/dashboard/history.js", "/dashboard/signedout.js", "/dashboard/visible.js", "/dashboard/strictjson.js", "/dashboard/canonorder.js", "/dashboard/entries.js", "/dashboard/style.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		body, _ := io.ReadAll(rec.Body)
		for _, bad := range []string{"http://", "https://", "//cdn", "<script>", "style=\""} {
			if strings.Contains(string(body), bad) {
				t.Fatalf("%s contains %q", p, bad)
			}
		}
	}
}
