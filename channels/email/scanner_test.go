package email

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// What a mail security scanner or a link-preview bot does with every link
// of a message — GET it (with prefetch headers, again and again), HEAD it,
// add query strings, try other methods, follow the page's own links —
// decides nothing, spends nothing, and draws the agent's text as text:
// afterwards the request is pending with no vote, and the approver's link
// still decides.
func TestScannerFetchingTheLinkDecidesNothing(t *testing.T) {
	lead, _ := keys.Generate(nil)
	w := testkit.NewWorld(t, testkit.Options{
		PolicyTOML: fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")),
		Server:     "pay", Grants: []string{"deploys"}})
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, `{"purpose":"<script>alert(1)</script><a href=\"javascript:x\">"}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	id := out.ApprovalRequestID
	now := time.Now()
	c := testChannel(t, &now)
	c.o.Policy = w.Kernel.Policy
	srv := httptest.NewServer(c.Handler(w.Kernel))
	defer srv.Close()
	link := srv.URL + LinkPath + c.Link(id, lead.Public().String(), now.Add(time.Hour))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	fetch := func(method, url string, hdr map[string]string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	prefetch := map[string]string{"Purpose": "prefetch", "Sec-Purpose": "prefetch", "X-Moz": "prefetch", "User-Agent": "Mozilla/5.0 (compatible; SafeLinks)"}
	for range 3 {
		code, hdr, page := fetch(http.MethodGet, link, prefetch)
		if code != http.StatusOK || hdr.Get("Location") != "" {
			t.Fatalf("GET: %d %v", code, hdr)
		}
		for _, h := range []string{"Content-Security-Policy", "Referrer-Policy", "Cache-Control", "X-Frame-Options"} {
			if hdr.Get(h) == "" {
				t.Fatalf("the link page has no %s header", h)
			}
		}
		if strings.Contains(page, "<script>alert") || strings.Contains(page, `href="javascript:`) ||
			!strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatalf("the agent's purpose is not drawn as text:\n%s", page)
		}
		// The page's one link is the dashboard's, on this origin, carrying
		// the link in its fragment (never sent to a server).
		if !strings.Contains(page, `href="/dashboard/#email=`) || strings.Count(page, `href="`) != 2 {
			t.Fatalf("the page links elsewhere:\n%s", page)
		}
	}
	if code, _, body := fetch(http.MethodHead, link, prefetch); code != http.StatusOK || body != "" {
		t.Fatalf("HEAD: %d %q", code, body)
	}
	if code, _, body := fetch(http.MethodGet, link, map[string]string{"Accept": "application/json"}); code != http.StatusOK ||
		!strings.Contains(body, `"status":"pending"`) {
		t.Fatalf("GET JSON: %d %s", code, body)
	}
	// A query string is ignored, never reflected; other methods and paths
	// are refused.
	code, hdr, page := fetch(http.MethodGet, link+"?next=https://evil.example/&q=%3Cscript%3Ex%3C/script%3E", nil)
	if code != http.StatusOK || hdr.Get("Location") != "" || strings.Contains(page, "evil.example") || strings.Contains(page, "<script>x") {
		t.Fatalf("GET with a query string: %d %v\n%s", code, hdr, page)
	}
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		if code, _, _ := fetch(m, link, nil); code != http.StatusMethodNotAllowed {
			t.Fatalf("%s: %d", m, code)
		}
	}
	if code, _, _ := fetch(http.MethodGet, link+"/approve", nil); code != http.StatusNotFound {
		t.Fatalf("GET link/approve: %d", code)
	}
	// An empty POST (a scanner submitting nothing) decides nothing either.
	res, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("decision=approved"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a form POST: %d", res.StatusCode)
	}

	if req, err := w.Kernel.Approval(id); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("after the scanner: %+v %v", req, err)
	}
	tok := w.Token(t, id, lead, approval.DecisionApproved, nil)
	res, err = http.Post(link, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the approver's own vote after the scanner: %d", res.StatusCode)
	}
}
