package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// What a failed HTTP delivery tells the kernel (see kernel.DeliveryError):
//
//	connection refused, DNS failure, dial timeout  not delivered, retryable
//	429 (a rate limit refused it)                   not delivered, retryable, Retry-After
//	503 with "Chio-Not-Run: true"                   not delivered, retryable, Retry-After
//	503 without it, 502, 504                        maybe delivered, retryable, Retry-After
//	any non-2xx with "Chio-Outcome: unknown"        maybe delivered, final (asking again gets the same)
//	timeout or reset after the request was sent    maybe delivered, retryable
//	any other non-2xx                              the tool ran and failed (ToolError)
//
// The kernel retries within the tool's retry deadline; at_most_once tools
// are retried only when the call certainly was not delivered.

// NotRunHeader, set to "true" on a 503, is a tool server's word that it
// refused the call without running any of it (sdk/toolserver sets it).
const NotRunHeader = "Chio-Not-Run"

// OutcomeHeader, set to "unknown" on a non-2xx, is a tool server's word
// that an earlier delivery of the call may have run and it cannot say how
// it ended (sdk/toolserver sets it on its 409).
const OutcomeHeader = "Chio-Outcome"

// classifyTransportError describes an error from http.Client.Do.
func classifyTransportError(err error) error {
	// The error becomes the receipt's tool_error, and url.Error repeats the
	// URL, which may hold a credential: keep its cause. (The checks below
	// look through url.Error, so they classify err the same either way.)
	cause := err
	var uerr *url.Error
	if errors.As(err, &uerr) {
		cause = uerr.Err
	}
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns), errors.Is(err, syscall.ECONNREFUSED):
		// No connection was made: the request never left.
		return &kernel.DeliveryError{Err: cause, NotDelivered: true, Retryable: true}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		strings.Contains(err.Error(), "EOF"):
		// The request may have been read and acted on before the failure.
		return &kernel.DeliveryError{Err: cause, Retryable: true}
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return &kernel.DeliveryError{Err: cause, Retryable: true}
	}
	return &kernel.DeliveryError{Err: cause}
}

// classifyStatus turns the statuses that mean "not run (yet)" into a
// DeliveryError; nil for every other status.
func classifyStatus(resp *http.Response, body []byte) error {
	if resp.StatusCode/100 != 2 && resp.Header.Get(OutcomeHeader) == "unknown" {
		// The tool server does not know whether an earlier delivery ran
		// (sdk/toolserver's 409 for a key a crash interrupted): not a
		// failure of the tool, and not "not run" either.
		return &kernel.DeliveryError{Err: fmt.Errorf("http %d: %s", resp.StatusCode, snippet(body))}
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return &kernel.DeliveryError{Err: fmt.Errorf("http %d: %s", resp.StatusCode, snippet(body)),
			NotDelivered: true, Retryable: true, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case http.StatusServiceUnavailable:
		// A 503 is "not run" only when the tool server says so. Proxies
		// answer 503 of their own after forwarding the request (Envoy and
		// so Istio when the backend resets mid-request, load balancers when
		// the backend went away): the tool may have run, and an
		// at_most_once call must not be sent again on a guess.
		return &kernel.DeliveryError{Err: fmt.Errorf("http %d: %s", resp.StatusCode, snippet(body)),
			NotDelivered: resp.Header.Get(NotRunHeader) == "true",
			Retryable:    true, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return &kernel.DeliveryError{Err: fmt.Errorf("http %d: %s", resp.StatusCode, snippet(body)),
			Retryable: true, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return nil
}

// retryAfter parses Retry-After (delta seconds or an HTTP date); 0 when
// absent or unreadable. It is capped: a server cannot park a call for a day.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if errors.Is(err, strconv.ErrRange) && n > 0 { // more seconds than an int holds
		return MaxRetryAfter
	}
	if err == nil && n >= 0 {
		// Capped before the multiplication, which would wrap around past
		// ~292 years of seconds into a short or negative wait.
		d = time.Duration(min(n, int(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), MaxRetryAfter)
}
