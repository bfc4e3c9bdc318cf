package mcp

import (
	"net/http"
	"net/url"
)

// urlCredentials keeps the credential parts of an upstream's URL (a
// userinfo, a query such as ?key=…) out of everything that repeats a URL.
// net/http's url.Error quotes the request URL (masking only a userinfo
// password), and the SDK wraps that error into why the upstream is down,
// which becomes a refused call's tool_error (kept in the signed receipt,
// shown to the agent and every reader) and a line of chiod's log. So the
// SDK is given the URL without them (withoutCredentials), and they are put
// back on each request here, below everything that reports errors, as
// net/http would have sent them: the query on the URL, the userinfo as
// Basic authentication. Requests for any other origin get neither.
type urlCredentials struct {
	next   http.RoundTripper
	origin string // scheme://host of the upstream
	user   *url.Userinfo
	query  string
}

// withoutCredentials splits endpoint into the URL the SDK is given
// (scheme, host and path) and the transport that adds the rest back.
func withoutCredentials(endpoint *url.URL, next http.RoundTripper) (string, http.RoundTripper) {
	shown := url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host, Path: endpoint.Path, RawPath: endpoint.RawPath}
	if endpoint.User == nil && endpoint.RawQuery == "" {
		return endpoint.String(), next
	}
	return shown.String(), &urlCredentials{next: next, origin: endpoint.Scheme + "://" + endpoint.Host,
		user: endpoint.User, query: endpoint.RawQuery}
}

func (c *urlCredentials) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme+"://"+req.URL.Host != c.origin {
		return c.next.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	if c.query != "" {
		if req.URL.RawQuery == "" {
			req.URL.RawQuery = c.query
		} else {
			req.URL.RawQuery = c.query + "&" + req.URL.RawQuery
		}
	}
	if c.user != nil && req.Header.Get("Authorization") == "" {
		password, _ := c.user.Password()
		req.SetBasicAuth(c.user.Username(), password)
	}
	return c.next.RoundTrip(req)
}
