package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/connect"
	"github.com/chiokernel/chio/internal/jsonexact"
)

// remote holds the flags every server-talking command shares.
type remote struct {
	url    string
	output string
	e      *Env
	http   *http.Client
	// connectTimeout bounds making each request's connection: the TCP
	// connect and, for https, the TLS handshake (internal/connect).
	connectTimeout time.Duration
	// agent marks an agent's own requests (chio call): they never carry
	// the operator's bearer token from the environment, only the agent's
	// key-signed proofs.
	agent bool
}

func addRemote(fs *flag.FlagSet, e *Env) *remote {
	// Redirects are never followed: chiod does not send them, so one comes
	// from something in between, and following it would re-send a signed
	// call or token elsewhere (307) or turn a POST into a GET (302/303).
	// send reports it as an answer that is not chiod's.
	r := &remote{e: e, http: &http.Client{Timeout: 0, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	fs.StringVar(&r.url, "url", "", "chiod URL (env CHIO_URL, default http://127.0.0.1:7420)")
	fs.StringVar(&r.output, "output", "table", "output: table, json or jsonl")
	r.connectTimeout = connect.DefaultTimeout
	fs.Func("connect-timeout", "how long making each connection to chiod (TCP connect, TLS handshake) may take (default 10s)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 10s, not %q", v)
		}
		r.connectTimeout = d
		return nil
	})
	return r
}

func (r *remote) base() string {
	u := envOr(r.e, r.url, "CHIO_URL")
	if u == "" {
		u = "http://127.0.0.1:7420"
	}
	return strings.TrimRight(u, "/")
}

func (r *remote) checkOutput() error {
	switch r.output {
	case "table", "json", "jsonl":
		return nil
	}
	return usageError("--output must be table, json or jsonl")
}

// apiError is the server's error envelope.
type apiError struct {
	Status  int    `json:"-"` // HTTP status (the answer's, never a member of its body)
	Code    string `json:"error"`
	Message string `json:"message"`
	// RetryAfter is the answer's Retry-After header (retryDelay), 0 if it
	// gave none: how long chiod asked to be left before the next request.
	RetryAfter time.Duration `json:"-"`
}

func (a *apiError) Error() string { return fmt.Sprintf("%s (%d): %s", a.Code, a.Status, a.Message) }

// do sends a request with the admin or reader token from the environment
// and decodes a JSON answer into out. Statuses in ok are successes; others
// decode as *apiError.
func (r *remote) do(ctx context.Context, method, path string, body any, out any, ok ...int) (int, error) {
	var raw []byte
	if body != nil {
		// Without HTML escaping: a call's arguments and capability go as
		// given (json.Marshal would send each '<' as six bytes, \u003c).
		b, err := marshalJSON(body, true)
		if err != nil {
			return 0, err
		}
		raw = b
	}
	return r.send(ctx, method, path, raw, nil, out, ok...)
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// printJSON writes v indented (json) or compact (jsonl).
//
// What it prints is shown: every character a terminal acts on or draws
// invisibly (a C1 control such as U+009B, a bidi override, a zero-width
// space, DEL) is written as a JSON \u escape, the same value. JSON encoding
// escapes only the C0 controls, and what is printed here carries agents'
// and tools' text: receipts' reasons and tool errors, respond results,
// stats groups. Output that must stay byte for byte what was signed (the
// jsonl receipt listings) does not come here.
func printJSON(w io.Writer, v any, compact bool) {
	b, _ := marshalJSON(v, compact)
	lines := strings.Split(string(b), "\n") // the indentation's newlines stay
	for i, l := range lines {
		lines[i] = escapeShown(l, true)
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// marshalJSON is json.Marshal (compact) or json.MarshalIndent without HTML
// escaping: what is sent and printed holds the characters of the
// arguments, outputs and notes it carries ("<", not \u003c), raw members
// byte for byte.
func marshalJSON(v any, compact bool) ([]byte, error) {
	if compact {
		return jsonexact.Marshal(v)
	}
	return jsonexact.MarshalIndent(v, "", "  ")
}

// explainUnauthorized adds to an operator command's 401 what most often
// caused it: no token sent, a token that may only read (chiod's
// WWW-Authenticate error="insufficient_scope"), or a token that is not
// this chiod's.
func explainUnauthorized(ae *apiError, req *http.Request, resp *http.Response, hdr http.Header) {
	switch {
	case req.Header.Get("Authorization") == "" && hdr.Get("Chio-Proof") == "":
		// Most often a shell without the README's export: say so.
		ae.Message += "; no token was sent: set CHIO_ADMIN_TOKEN (or CHIO_READ_TOKEN to read), which chiod writes to admin.token and read.token in its data dir"
	case strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`):
		// chiod took the token, but it may only read (the reader token).
		ae.Message += "; this command needs CHIO_ADMIN_TOKEN (chiod writes it to admin.token in its data dir)"
	case strings.HasPrefix(req.Header.Get("Authorization"), "Bearer "):
		// Most often a shell that kept the token of an earlier chiod (a
		// quick start begun again on a fresh data dir): say where to read it.
		ae.Message += "; the token sent is not this chiod's: read CHIO_ADMIN_TOKEN (or CHIO_READ_TOKEN) again from admin.token (read.token) in chiod's data dir, or its environment"
	}
}
