package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
)

// An export refused because chiod is shutting down gracefully answers 503
// (chiod is going away), not 429 and Retry-After (a share that frees up
// soon, which `chio receipt export` reports as "try again in 10s"). An
// export waiting for its credential's share, held by a live export, when
// the shutdown begins is refused so; and one that would find its slots
// free is refused too, rather than started and cut when the shutdown's
// grace period ends.
func TestExportDuringShutdownAnswers503(t *testing.T) {
	w := bigExportWorld(t, 12000)
	first := startExport(t, w.URL, "reader") // holds the reader token's share
	waited := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("GET", w.URL+"/v1/export", nil)
		req.Header.Set("Authorization", "Bearer reader")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			resp = &http.Response{Status: err.Error(), Body: http.NoBody, Header: http.Header{}}
		}
		waited <- resp
	}()
	for w.API.ExportsWaiting() == 0 { // parked on the share the first export holds
		runtime.Gosched()
	}
	w.Srv.Config.RegisterOnShutdown(w.API.CloseStreams) // as chiod does
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- w.Srv.Config.Shutdown(ctx) // waits for both exports' handlers
	}()
	wantShuttingDown(t, "an export waiting for its share as the shutdown began", <-waited)

	// net/http serves no request it reads once shutting down, so the
	// handler is called directly for one that was read just before.
	req := httptest.NewRequest("GET", "/v1/export", nil)
	req.Header.Set("Authorization", "Bearer admin")
	rec := httptest.NewRecorder()
	w.API.ServeHTTP(rec, req)
	wantShuttingDown(t, "an export with its slots free, during the shutdown", rec.Result())

	first.Body.Close() // the live export ends; so does the shutdown
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func wantShuttingDown(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	var body httpapi.APIError
	err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	if resp.StatusCode != http.StatusServiceUnavailable || err != nil || body.Code != httpapi.CodeUnavailable ||
		!strings.Contains(body.Message, "shutting down") || resp.Header.Get("Retry-After") != "" {
		t.Errorf("%s: %d %s Retry-After %q %+v (%v); want 503 unavailable, shutting down, no Retry-After",
			what, resp.StatusCode, resp.Status, resp.Header.Get("Retry-After"), body, err)
	}
}
