package mcp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// newHTTPTransport is the pooled transport for Streamable HTTP upstreams.
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		// The policy names where calls go; an ambient HTTP_PROXY must not
		// reroute them.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// dialHTTP connects to a Streamable HTTP MCP endpoint. Each session gets
// its own tap (JSON-RPC ids restart per session) over the shared pool.
func (u *Upstream) dialHTTP(endpoint string, base http.RoundTripper) (func(ctx context.Context) (*conn, error), error) {
	p, err := url.Parse(endpoint)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("mcp server %q: url %q is not an absolute http(s) URL", u.id, endpoint)
	}
	return func(ctx context.Context) (*conn, error) {
		t := newTap()
		shown, rt := withoutCredentials(p, &httpTap{base: base, tap: t})
		hc := &http.Client{
			Transport: rt,
			// A redirect would re-POST the arguments to a URL the policy
			// does not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		tr := &mcpsdk.StreamableClientTransport{Endpoint: shown, HTTPClient: hc,
			MaxRetries: 2, MaxEventSize: MaxMessageBytes}
		cs, err := u.client.Connect(ctx, tr, nil)
		if err != nil {
			return nil, err
		}
		return &conn{cs: cs, tap: t, stop: func() { cs.Close() }}, nil
	}, nil
}
