package dispatch

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// newHTTPClient builds the pooled client for the http transport. It carries
// thousands of calls/s to a handful of hosts (often loopback), so the idle
// pool per host is large: DefaultTransport's 2 would churn sockets into
// TIME_WAIT under load.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			// Tool URLs come from the policy; an ambient HTTP_PROXY must not
			// silently reroute allowed calls through another host.
			Proxy: nil,
			DialContext: (&net.Dialer{
				Timeout:   5 * time.Second,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		// Never follow redirects: the policy names the URL a call may go
		// to, and a 307 would re-POST the arguments elsewhere. A 3xx is
		// reported as a non-2xx answer (ToolError) instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// encodeBody writes the JSON a tool server receives,
// {"request_id","tool","arguments"}, with the arguments spliced in as the
// exact canonical bytes parameter_hash covers (encoding/json would
// re-escape them: "<" becomes "\u003c").
func encodeBody(req kernel.DispatchRequest) ([]byte, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	if !json.Valid(args) {
		return nil, errors.New("arguments are not valid JSON")
	}
	b := make([]byte, 0, len(args)+len(req.RequestID)+len(req.Tool)+48)
	b = append(b, `{"request_id":`...)
	b, _ = jsontext.AppendQuote(b, req.RequestID)
	b = append(b, `,"tool":`...)
	b, _ = jsontext.AppendQuote(b, req.Tool)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	return append(b, '}'), nil
}

func (r *Router) dispatchHTTP(ctx context.Context, rt route, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	body, err := encodeBody(req)
	if err != nil {
		return kernel.DispatchResult{}, fmt.Errorf("encode request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, rt.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.url, bytes.NewReader(body))
	if err != nil {
		return kernel.DispatchResult{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("Idempotency-Key", req.RequestID)
	// The tool's dedupe key, but not a licence for net/http to re-send:
	// with Idempotency-Key and a GetBody, Request.isReplayable holds and
	// the Transport silently re-POSTs the call on a new connection when a
	// reused one dies after the write, before any response byte — the
	// tool runs twice for one attempt. Without GetBody the request is
	// never replayed (nor re-sent by a redirect, which is refused anyway).
	hreq.GetBody = nil

	if req.Attempt > 0 {
		hreq.Header.Set("Chio-Attempt", strconv.Itoa(req.Attempt))
	}
	if r.signCall != nil {
		// The kernel's signature over this server's id, this attempt's
		// time and the exact body: the tool server can tell chiod's
		// calls from anyone else's (internal/signed/toolcall.go).
		sentAt := r.now().UnixMilli()
		sig := r.signCall(signed.Message(signed.ToolCallDomain, signed.ToolCallMessage(rt.id, sentAt, body)))
		hreq.Header.Set(signed.ToolCallServerHeader, rt.id)
		hreq.Header.Set(signed.ToolCallSentAtHeader, strconv.FormatInt(sentAt, 10))
		hreq.Header.Set(signed.ToolCallSignatureHeader, hex.EncodeToString(sig))
	}

	resp, err := r.client.Do(hreq)
	if err != nil {
		return kernel.DispatchResult{}, classifyTransportError(err)
	}
	defer resp.Body.Close()
	// Read one byte past the limit so "exactly at the limit" and "over it"
	// are distinguishable. Reading to EOF also lets the connection be reused.
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return kernel.DispatchResult{}, fmt.Errorf("read response: %w", err)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if derr := classifyStatus(resp, data); derr != nil {
		return kernel.DispatchResult{}, derr
	}
	if !ok {
		// The server answered: the tool ran and failed or refused. That is a
		// result for the receipt, not a delivery failure.
		return kernel.DispatchResult{
			Output:    json.RawMessage("null"),
			ToolError: fmt.Sprintf("http %d: %s", resp.StatusCode, snippet(data)),
		}, nil
	}
	if len(data) > MaxResponseBytes {
		return kernel.DispatchResult{}, fmt.Errorf("response exceeds %d bytes", MaxResponseBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return kernel.DispatchResult{Output: json.RawMessage("null")}, nil
	}
	// json.Valid does not check UTF-8 inside strings; receipts are
	// canonical JSON, so reject invalid UTF-8 here rather than later.
	if !json.Valid(data) || !utf8.Valid(data) {
		// Not the URL: it may hold a credential, and this error is kept in the receipt.
		return kernel.DispatchResult{}, errors.New("the tool server's response is not valid JSON")
	}
	return kernel.DispatchResult{Output: json.RawMessage(data)}, nil
}

// snippet returns the first maxToolErrorBody bytes of b as valid UTF-8 (a
// rune cut in half becomes U+FFFD).
func snippet(b []byte) string {
	if len(b) > maxToolErrorBody {
		b = b[:maxToolErrorBody]
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
}
