package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// newTestRouter builds a Router over servers with a throwaway data dir.
func newTestRouter(t testing.TB, servers []policy.Server, opts ...Option) *Router {
	t.Helper()
	r, err := New(servers, t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func httpServer(id, url string) []policy.Server {
	return []policy.Server{{ID: id, Transport: "http", URL: url}}
}

func TestHTTPRequestShape(t *testing.T) {
	type seen struct {
		method, ctype, idem string
		body                map[string]json.RawMessage
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, ctype: r.Header.Get("Content-Type"), idem: r.Header.Get("Idempotency-Key")}
		if err := json.NewDecoder(r.Body).Decode(&s.body); err != nil {
			t.Error(err)
		}
		got <- s
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	r := newTestRouter(t, httpServer("billing", srv.URL))

	res, err := r.Dispatch(context.Background(), kernel.DispatchRequest{
		RequestID: "req-1", Server: "billing", Tool: "refund", Arguments: json.RawMessage(`{"amount":5}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"ok":true}` || res.ToolError != "" {
		t.Fatalf("result = %s / %q", res.Output, res.ToolError)
	}
	s := <-got
	if s.method != http.MethodPost || s.ctype != "application/json" || s.idem != "req-1" {
		t.Fatalf("method %q content-type %q idempotency-key %q", s.method, s.ctype, s.idem)
	}
	want := map[string]string{"request_id": `"req-1"`, "tool": `"refund"`, "arguments": `{"amount":5}`}
	if len(s.body) != len(want) {
		t.Fatalf("body keys = %v", s.body)
	}
	for k, v := range want {
		if string(s.body[k]) != v {
			t.Errorf("body[%s] = %s, want %s", k, s.body[k], v)
		}
	}
}

func TestHTTPResponses(t *testing.T) {
	exact := `"` + strings.Repeat("a", MaxResponseBytes-2) + `"` // exactly the limit
	tests := []struct {
		name        string
		status      int
		body        string
		wantOutput  string
		wantToolErr string
		wantErr     bool
	}{
		{name: "json passes through", status: 200, body: `{"a":[1,2]}`, wantOutput: `{"a":[1,2]}`},
		{name: "201 is ok", status: 201, body: `"made"`, wantOutput: `"made"`},
		{name: "empty body is null", status: 200, body: "", wantOutput: "null"},
		{name: "204 is null", status: 204, wantOutput: "null"},
		{name: "exactly at limit", status: 200, body: exact, wantOutput: exact},
		{name: "500 is tool error", status: 500, body: "boom\n", wantToolErr: "http 500: boom"},
		{name: "403 body capped", status: 403, body: strings.Repeat("x", 2000), wantToolErr: "http 403: " + strings.Repeat("x", 512)},
		{name: "redirect not followed", status: 307, body: "", wantToolErr: "http 307: "},
		{name: "invalid json", status: 200, body: `{"a":`, wantErr: true},
		{name: "trailing garbage", status: 200, body: `{} {}`, wantErr: true},
		{name: "invalid utf8", status: 200, body: "\"\xff\"", wantErr: true},
		{name: "oversize", status: 200, body: `"` + strings.Repeat("a", MaxResponseBytes) + `"`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 307 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			r := newTestRouter(t, httpServer("s", srv.URL))
			res, err := r.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "id", Server: "s", Tool: "t"})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got %.80s / %q", res.Output, res.ToolError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.ToolError != tc.wantToolErr {
				t.Errorf("ToolError = %.100q, want %.100q", res.ToolError, tc.wantToolErr)
			}
			if tc.wantToolErr == "" && string(res.Output) != tc.wantOutput {
				t.Errorf("Output = %.80s, want %.80s", res.Output, tc.wantOutput)
			}
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Drain the body so the server watches the connection and notices
		// the client hanging up; otherwise Close waits out the 5 s.
		io.Copy(io.Discard, r.Body)
		select { // hang until the client gives up
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	r := newTestRouter(t, httpServer("slow", srv.URL), WithDefaultTimeout(50*time.Millisecond))
	start := time.Now()
	_, err := r.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "id", Server: "slow", Tool: "t"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r := newTestRouter(t, httpServer("gone", url))
	if _, err := r.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "id", Server: "gone", Tool: "t"}); err == nil {
		t.Fatal("want error for a closed server")
	}
}

func TestDispatchErrors(t *testing.T) {
	r := newTestRouter(t, []policy.Server{{ID: "demo", Transport: "builtin"}})
	ctx := context.Background()
	if _, err := r.Dispatch(ctx, kernel.DispatchRequest{RequestID: "id", Server: "nope", Tool: "echo"}); !errors.Is(err, kernel.ErrUnknownServer) {
		t.Errorf("unknown server: err = %v", err)
	}
	if _, err := r.Dispatch(ctx, kernel.DispatchRequest{Server: "demo", Tool: "echo"}); err == nil {
		t.Error("empty request id: want error")
	}
	r.Close()
	if _, err := r.Dispatch(ctx, kernel.DispatchRequest{RequestID: "id", Server: "demo", Tool: "echo"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name    string
		servers []policy.Server
	}{
		{"empty id", []policy.Server{{Transport: "builtin"}}},
		{"duplicate id", []policy.Server{{ID: "a", Transport: "builtin"}, {ID: "a", Transport: "builtin"}}},
		{"unknown transport", []policy.Server{{ID: "a", Transport: "grpc"}}},
		{"relative url", []policy.Server{{ID: "a", Transport: "http", URL: "/tool"}}},
		{"non-http url", []policy.Server{{ID: "a", Transport: "http", URL: "file:///etc/passwd"}}},
		{"negative timeout", []policy.Server{{ID: "a", Transport: "http", URL: "http://x", TimeoutSeconds: -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.servers, t.TempDir()); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

// BenchmarkHTTPDispatch measures one round trip through the http transport
// to a loopback server answering {}.
func BenchmarkHTTPDispatch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	r := newTestRouter(b, httpServer("s", srv.URL))
	req := kernel.DispatchRequest{RequestID: "bench", Server: "s", Tool: "t", Arguments: json.RawMessage(`{"x":1}`)}
	ctx := context.Background()

	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Dispatch(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := r.Dispatch(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// A tool POST whose (reused) connection dies after the tool server read it,
// before any response byte, must not be re-sent by net/http: the
// Idempotency-Key header alone would make the Transport treat it as
// replayable. One Dispatch is one attempt; the failure is "may have run".
func TestHTTPToolCallIsNeverResentByNetHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Idempotency-Key") == "req-pay" && calls.Add(1) == 1 {
			// The tool server read the call and acted; the connection
			// then dies before it answers (a crash, an LB reset).
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.Close()
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	r := newTestRouter(t, httpServer("bank", srv.URL))
	ctx := context.Background()
	// A first call leaves a kept-alive connection in the pool, so the
	// next one goes out on a reused connection (the case net/http retries).
	if _, err := r.Dispatch(ctx, kernel.DispatchRequest{RequestID: "req-warm", Server: "bank", Tool: "pay"}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Dispatch(ctx, kernel.DispatchRequest{RequestID: "req-pay", Server: "bank", Tool: "pay",
		Arguments: json.RawMessage(`{"amount":100}`), Attempt: 1})
	if n := calls.Load(); n != 1 {
		t.Fatalf("one Dispatch sent the call %d times (result %s / %q, err %v)", n, res.Output, res.ToolError, err)
	}
	var de *kernel.DeliveryError
	if !errors.As(err, &de) || de.NotDelivered {
		t.Fatalf("a call the tool server read must be 'may have run': %v", err)
	}
}
