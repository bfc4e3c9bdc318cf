package httpapi_test

import (
	"net/http"
	"testing"
)

// An HTTP authentication scheme is case-insensitive (RFC 9110 §11.1), so
// "bearer", "BEARER" and "Bearer" name the same scheme. chiod matched the
// scheme's spelling: a client (or a proxy in between) that sent the
// reader or admin token under "bearer" was told 401, "a valid bearer
// token … is required", for a valid token. The token itself stays exact.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	f := newApprovalsFixture(t)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		for _, c := range []struct {
			method, path, tok string
		}{
			{"GET", "/approvals/pending", approvalsReader},
			{"GET", "/approvals/pending", approvalsAdmin},
			{"POST", "/v1/capabilities", approvalsAdmin},
		} {
			body := ""
			if c.method == "POST" {
				body = `{"subject":"` + keyOther.Public().String() + `","grants":["echo"],"ttl":"1h"}`
			}
			code, m := f.do(t, c.method, c.path, body, map[string]string{"Authorization": scheme + " " + c.tok})
			if code == http.StatusUnauthorized {
				t.Errorf("%s %s with %q and a valid token: %d %v", c.method, c.path, scheme, code, m)
			}
		}
	}
	// A wrong token is refused under any spelling of the scheme, and
	// another scheme is no bearer.
	for _, h := range []string{"bearer " + approvalsReader + "x", "Basic " + approvalsAdmin, "Bearer" + approvalsAdmin, "bearer"} {
		if code, m := f.do(t, "GET", "/approvals/pending", "", map[string]string{"Authorization": h}); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d %v, want 401", h, code, m)
		}
	}
}
