package chio_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	chio "github.com/chiokernel/chio/sdk"
)

// A call's proof, a status proof and a bearer are meant for one server.
// The Python and TypeScript SDKs never follow a redirect; the Go SDK's
// default http.Client did: a 307 re-sent the signed call (and the
// Chio-Proof header) to wherever Location pointed. A redirect must come
// back as an *APIError carrying the 3xx, as in the other SDKs, and nothing
// may reach the Location.
func TestRedirectIsNotFollowed(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" proof="+r.Header.Get("Chio-Proof"))
		mu.Unlock()
		http.Error(w, "not here", http.StatusTeapot)
	}))
	t.Cleanup(elsewhere.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	c, err := chio.NewClient(redirector.URL, chio.WithKeyFile(os.Getenv("CHIO_KEY")),
		chio.WithCapabilityFile(os.Getenv("CHIO_CAPABILITY")), chio.WithBearer("reader-token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, callErr := c.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo", Arguments: map[string]any{"msg": "hi"}})
	_, statusErr := c.Status(ctx, "req-x")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("the SDK followed a redirect and sent %v to another server", seen)
	}
	for name, err := range map[string]error{"CallTool": callErr, "Status": statusErr} {
		var ae *chio.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusTemporaryRedirect {
			t.Errorf("%s: error %v is not an *APIError with status 307", name, err)
		}
		if errors.Is(err, chio.ErrOutcomeUnknown) || errors.Is(err, chio.ErrUnavailable) {
			t.Errorf("%s: a redirect (nothing forwarded) classified as %v", name, err)
		}
	}
}
