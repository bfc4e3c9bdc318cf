package mcp

import (
	"net/http"
	"net/url"
	"testing"
)

type recordingRT struct{ got []*http.Request }

func (r *recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// The credentials withheld from the SDK still reach the upstream, as
// net/http would have sent them, and never another origin.
func TestURLCredentialsAreSentToTheUpstreamOnly(t *testing.T) {
	endpoint, _ := url.Parse("https://chio:pw@mcp.example/mcp?key=k1")
	rec := &recordingRT{}
	shown, rt := withoutCredentials(endpoint, rec)
	if shown != "https://mcp.example/mcp" {
		t.Fatalf("the SDK is given %q, want the URL without userinfo and query", shown)
	}
	for _, u := range []string{shown, shown + "?session=s", "https://elsewhere.example/mcp"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if req.URL.String() != u || req.Header.Get("Authorization") != "" {
			t.Fatalf("the caller's request was changed: %s %q", req.URL, req.Header.Get("Authorization"))
		}
	}
	want := []string{"https://mcp.example/mcp?key=k1", "https://mcp.example/mcp?key=k1&session=s", "https://elsewhere.example/mcp"}
	for i, req := range rec.got {
		if req.URL.String() != want[i] {
			t.Errorf("request %d went to %s, want %s", i, req.URL, want[i])
		}
		user, pass, ok := req.BasicAuth()
		if i < 2 && (!ok || user != "chio" || pass != "pw") {
			t.Errorf("request %d: Basic auth %q %q %v, want the URL's userinfo", i, user, pass, ok)
		}
		if i == 2 && ok {
			t.Errorf("the userinfo was sent to another origin: %s", req.URL)
		}
	}
	plain, _ := url.Parse("http://127.0.0.1:1/mcp")
	if shown, rt := withoutCredentials(plain, rec); shown != plain.String() || rt != http.RoundTripper(rec) {
		t.Errorf("a URL without credentials: %q, %T", shown, rt)
	}
}
