package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// An event stream asked for while chiod shuts down gracefully answers 503
// unavailable, "chiod is shutting down" (as an export does), not a 200
// stream that ends at once: a client reading that as a stream it was
// given reconnects at once, and the dashboard shows "live" between the
// reconnects.
//
// net/http serves no request it reads once shutting down, so the request
// here was read just before: it waits in front of the API (a handler
// that runs the API only once the shutdown has closed the streams) and
// goes on over its own connection.
func TestStreamDuringShutdownAnswers503(t *testing.T) {
	f := newApprovalsFixture(t)
	f.pendingRefund(t) // a request the stream would replay
	inFront, closed := make(chan struct{}), make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFront)
		<-closed
		f.api.ServeHTTP(w, r)
	}))
	srv.Config.RegisterOnShutdown(func() { f.api.CloseStreams(); close(closed) }) // as chiod does
	srv.Start()
	defer srv.Close()
	got := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/approvals/stream", nil)
		req.Header.Set("Authorization", "Bearer "+approvalsReader)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			resp = &http.Response{Status: err.Error(), Body: http.NoBody, Header: http.Header{}}
		}
		got <- resp
	}()
	<-inFront
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- srv.Config.Shutdown(ctx)
	}()
	wantShuttingDown(t, "an event stream read as the shutdown began", <-got)
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	// The admin token's, called directly, is refused alike.
	req := httptest.NewRequest("GET", "/approvals/stream", nil)
	req.Header.Set("Authorization", "Bearer "+approvalsAdmin)
	rec := httptest.NewRecorder()
	f.api.ServeHTTP(rec, req)
	wantShuttingDown(t, "the admin's event stream during the shutdown", rec.Result())
}
