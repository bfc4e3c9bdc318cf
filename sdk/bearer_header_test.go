package chio

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A bearer read from a token file ends in a newline: it is trimmed, as the
// TypeScript and Python SDKs do, instead of failing every read.
func TestWithBearerTrimsATokenFilesNewline(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{"approvals":[]}`)}}
	c := testClient(t, f, WithBearer("tok-secret\n"))
	if _, err := c.Pending(context.Background()); err != nil {
		t.Fatalf("Pending with a token file's newline: %v", err)
	}
	if got := f.headers[0].Get("Authorization"); got != "Bearer tok-secret" {
		t.Fatalf("Authorization = %q, want the trimmed token", got)
	}
}

// A bearer a header cannot carry (a control or non-ASCII character) is
// refused by NewClient as a bad request that quotes none of it, not sent,
// not retried, and not reported as a transport error.
func TestWithBearerRefusesWhatAHeaderCannotCarry(t *testing.T) {
	for name, tok := range map[string]string{
		"control":   "tok-secret\x01more",
		"inner LF":  "tok-secret\nmore",
		"non-ASCII": "tok-secrét",
		"DEL":       "tok-secret\x7f",
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{"approvals":[]}`)}}
		c, err := NewClient("http://127.0.0.1:1", WithBearer(tok))
		if err == nil {
			c = testClient(t, f, WithBearer(tok))
			_, err = c.Pending(context.Background())
		}
		if !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error quotes the token: %v", name, err)
		}
		if len(f.bodies) != 0 {
			t.Errorf("%s: %d requests sent", name, len(f.bodies))
		}
	}
}
