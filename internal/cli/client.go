package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// remote holds the flags every server-talking command shares.
type remote struct {
	url    string
	output string
	e      *Env
	http   *http.Client
}

func addRemote(fs *flag.FlagSet, e *Env) *remote {
	r := &remote{e: e, http: &http.Client{Timeout: 0}}
	fs.StringVar(&r.url, "url", "", "chiod URL (env CHIO_URL, default http://127.0.0.1:7420)")
	fs.StringVar(&r.output, "output", "table", "output: table, json or jsonl")
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
	Status  int
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (a *apiError) Error() string { return fmt.Sprintf("%s (%d): %s", a.Code, a.Status, a.Message) }

// do sends a request with the admin or reader token from the environment
// and decodes a JSON answer into out. Statuses in ok are successes; others
// decode as *apiError.
func (r *remote) do(ctx context.Context, method, path string, body any, out any, ok ...int) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base()+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t := r.e.Getenv("CHIO_ADMIN_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	} else if t := r.e.Getenv("CHIO_READ_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach chiod at %s: %w", r.base(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			if out != nil {
				if err := json.Unmarshal(data, out); err != nil {
					return resp.StatusCode, fmt.Errorf("bad response from chiod: %w", err)
				}
			}
			return resp.StatusCode, nil
		}
	}
	ae := &apiError{Status: resp.StatusCode}
	if json.Unmarshal(data, ae) != nil || ae.Code == "" {
		ae.Code, ae.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
	}
	return resp.StatusCode, ae
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// printJSON writes v indented (json) or compact (jsonl).
func printJSON(w io.Writer, v any, compact bool) {
	var b []byte
	if compact {
		b, _ = json.Marshal(v)
	} else {
		b, _ = json.MarshalIndent(v, "", "  ")
	}
	fmt.Fprintln(w, string(b))
}
