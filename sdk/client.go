package chio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/envelope"
	"github.com/chiokernel/chio/internal/keys"
)

// PrivateKey is an agent's or approver's Ed25519 key. The alias lets code
// outside this module name the type; obtain one with [LoadKey] or [ParseKey].
type PrivateKey = keys.PrivateKey

// LoadKey reads a PKCS#8 PEM Ed25519 private key file (`chio keygen`).
func LoadKey(path string) (PrivateKey, error) { return keys.LoadPrivateKey(path) }

// ParseKey decodes a PKCS#8 PEM Ed25519 private key.
func ParseKey(pem []byte) (PrivateKey, error) { return keys.ParsePKCS8PEM(pem) }

// DefaultURL is where chiod listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:7420"

// Limits on what chiod sends back: untrusted input meets a limit first.
const maxResponseBytes = 16 << 20

// Client talks to one chiod as one agent. It is safe for concurrent use.
// Every field is set once by NewClient.
type Client struct {
	base   string
	http   *http.Client
	key    *keys.PrivateKey // nil: no agent key (approver tooling, bearer reads)
	capRaw []byte           // the capability exactly as issued
	capID  string
	bearer string // reader/admin token, sent only on read routes
	// connectTimeout bounds each request's TCP connect (WithConnectTimeout).
	connectTimeout time.Duration
}

// Option configures a Client.
type Option func(*Client) error

// WithKey sets the agent key that signs calls and Chio-Proof headers.
func WithKey(k PrivateKey) Option {
	return func(c *Client) error { c.key = &k; return nil }
}

// WithKeyFile loads the agent key from a PKCS#8 PEM file.
func WithKeyFile(path string) Option {
	return func(c *Client) error {
		k, err := keys.LoadPrivateKey(path)
		if err != nil {
			return err
		}
		c.key = &k
		return nil
	}
}

// WithCapability sets the capability (the JSON object chiod issued).
func WithCapability(raw []byte) Option {
	return func(c *Client) error {
		raw = bytes.TrimSpace(raw)
		var head struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.ID == "" {
			return fmt.Errorf("%w: not a capability (want a JSON object with an id)", ErrBadRequest)
		}
		c.capRaw, c.capID = bytes.Clone(raw), head.ID
		return nil
	}
}

// WithCapabilityFile reads the capability from a file (`chio capability issue --out`).
func WithCapabilityFile(path string) Option {
	return func(c *Client) error {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("chio: capability: %w", err)
		}
		return WithCapability(raw)(c)
	}
}

// WithHTTPClient replaces the HTTP client (its CheckRedirect is not used:
// the client never follows a redirect). It must not set a Timeout
// shorter than a long-poll (about 45 s): the client bounds each request
// itself (60 s; a long-poll, its wait plus 15 s), and its TCP connect
// (WithConnectTimeout).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) error {
		if h == nil {
			return errors.New("chio: nil http client")
		}
		c.http = h
		return nil
	}
}

// WithBearer sets a reader or admin token (CHIO_READ_TOKEN /
// CHIO_ADMIN_TOKEN). Agents do not need one: they read their own calls
// with Chio-Proof. Approver tooling and [Client.Pending] do.
//
// A token file's trailing newline is trimmed. A token with a control or
// non-ASCII character left, which no header can carry, is refused as
// [ErrBadRequest] quoting none of it (net/http would fail every read with
// it as a transport error), as in the TypeScript and Python SDKs.
func WithBearer(token string) Option {
	return func(c *Client) error {
		token = strings.TrimSpace(token)
		for i := 0; i < len(token); i++ {
			if token[i] < 0x20 || token[i] > 0x7e {
				return fmt.Errorf("%w: the bearer token has a control or non-ASCII character (a header cannot carry it)", ErrBadRequest)
			}
		}
		c.bearer = token
		return nil
	}
}

// NewClient returns a client for the chiod at baseURL. A key and a
// capability are needed to call tools; either may be absent for approver
// or reader tooling.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: url %q must be http(s)://host[:port]", ErrBadRequest, baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{}, connectTimeout: DefaultConnectTimeout}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	// A proof, token or bearer is meant for this server: never follow a
	// redirect (net/http would re-send a 307's body and the Chio-Proof
	// header to wherever Location points). A 3xx comes back as an
	// *APIError, as in the TypeScript and Python SDKs. The caller's client
	// (WithHTTPClient) is copied, not changed.
	noRedirect := *c.http
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &noRedirect
	// A capability for another key would only fail later, call by call, as
	// "unauthorized": say what is wrong now.
	if c.key != nil && c.capRaw != nil {
		var head struct {
			Subject string `json:"subject"`
		}
		_ = json.Unmarshal(c.capRaw, &head)
		if head.Subject != c.key.Public().String() {
			return nil, fmt.Errorf("%w: the capability's subject %q is not this key (%s)", ErrBadRequest, head.Subject, c.key.Public())
		}
	}
	return c, nil
}

// FromEnv builds a client from CHIO_URL (default DefaultURL), CHIO_KEY (key
// file) and CHIO_CAPABILITY (capability file), as the `chio` CLI does.
// Bearer tokens are not read from the environment: pass WithBearer, so an
// agent never runs with an operator's token by accident. opts apply last.
func FromEnv(opts ...Option) (*Client, error) {
	u := os.Getenv("CHIO_URL")
	if u == "" {
		u = DefaultURL
	}
	var env []Option
	if f := os.Getenv("CHIO_KEY"); f != "" {
		env = append(env, WithKeyFile(f))
	}
	if f := os.Getenv("CHIO_CAPABILITY"); f != "" {
		env = append(env, WithCapabilityFile(f))
	}
	return NewClient(u, append(env, opts...)...)
}

// PublicKey is the agent key's text form ("" without a key).
func (c *Client) PublicKey() string {
	if c.key == nil {
		return ""
	}
	return c.key.Public().String()
}

// errTransport marks a request that never got a complete HTTP answer:
// it may or may not have reached chiod ([ErrOutcomeUnknown]).
type errTransport struct{ err error }

func (e *errTransport) Error() string        { return "chio: cannot reach chiod: " + e.err.Error() }
func (e *errTransport) Unwrap() error        { return e.err }
func (e *errTransport) Is(target error) bool { return target == ErrOutcomeUnknown }

// errBadAnswer marks a complete HTTP answer that cannot be read: larger
// than maxResponseBytes, or not the JSON expected. It came after the
// request reached a server, so for a call it may follow a decision
// (see errCallAnswerUnreadable); asking again gets the same answer.
type errBadAnswer struct{ err error }

func (e *errBadAnswer) Error() string { return e.err.Error() }
func (e *errBadAnswer) Unwrap() error { return e.err }

// requestTimeout bounds every request, as the TypeScript and Python SDKs
// do, so that a connection that died silently (no reset ever arrives) is
// given up even under context.Background(); a call is then retried under
// the same request id. A long-poll is bounded by its wait plus pollMargin,
// which is shorter. A variable only so that tests can shorten it.
var requestTimeout = 60 * time.Second

// errNoAnswer is the cause of the SDK's own time limits on one request
// (requestTimeout, a long-poll's wait plus pollMargin). It deliberately
// does not wrap context.DeadlineExceeded: the caller set no deadline, so
// nothing may read it as one (Confirm's [ErrTimedOut], "the deadline
// passed"). It surfaces as a transport error: retried, and for a call that
// is still unanswered after the retries, [ErrOutcomeUnknown].
var errNoAnswer = errors.New("no complete answer within the per-request time limit")

// transportErr wraps a failed request. When the request's own time limit
// (not the caller's context) ended it, the error says so and no longer
// matches context.DeadlineExceeded.
func transportErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errNoAnswer) || errors.Is(cause, errConnectTimeout) {
		return &errTransport{cause}
	}
	return &errTransport{err}
}

// send performs one request. Statuses in ok decode into out; any other
// status is an *APIError. body is sent exactly as given.
func (c *Client) send(ctx context.Context, method, path string, body []byte, hdr http.Header, out any, ok ...int) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, requestTimeout, errNoAnswer)
	defer cancel() // after the body is read
	ctx, stopConnectTimer := withConnectTimeout(ctx, c.connectTimeout)
	defer stopConnectTimer()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, transportErr(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return 0, transportErr(ctx, err)
	}
	if len(data) > maxResponseBytes {
		return resp.StatusCode, &errBadAnswer{fmt.Errorf("chio: response larger than %d bytes", maxResponseBytes)}
	}
	// chiod's answers are read as every chio client reads them: member
	// names matched exactly, and one that can be read two ways (two of its
	// own members named alike) refused, never read as Go's encoding/json
	// would (internal/envelope, testdata/sdk/call_outcomes.json).
	for _, s := range ok {
		if resp.StatusCode == s {
			if out != nil {
				if err := envelope.Unmarshal(data, out); err != nil {
					return resp.StatusCode, &errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): %w", resp.StatusCode, err)}
				}
			}
			return resp.StatusCode, nil
		}
	}
	ae := &APIError{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	// An error envelope that can be read two ways is not chiod's: the
	// answer is classified by its status alone, as any other body.
	if envelope.Unmarshal(data, ae) != nil || ae.Code == "" {
		ae.Code, ae.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		if len(ae.Message) > 200 {
			ae.Message = ae.Message[:200]
		}
	}
	return resp.StatusCode, ae
}

// readAuth authorizes a read of id: the bearer if one is set, and a
// Chio-Proof by the agent key if one is set (chiod uses the bearer first).
func (c *Client) readAuth(id string) (http.Header, error) {
	h := http.Header{}
	if c.bearer != "" {
		h.Set("Authorization", "Bearer "+c.bearer)
	}
	if c.key != nil {
		h.Set(statusProofHeader, signStatusProof(*c.key, id, time.Now()))
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: reading %s needs the agent key (WithKey) or a bearer (WithBearer)", ErrUnauthorized, id)
	}
	return h, nil
}
