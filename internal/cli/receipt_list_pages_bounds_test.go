package cli_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// `receipt list --since 1h` sent "since=1h" with every page, and chiod
// counted the hour back from its clock afresh for each: a listing longer
// than a page had a window that slid while it paged, so receipts inside
// the hour when the listing started were dropped from its later pages
// (and, with --until, receipts after the bound were added), while the
// listing claimed to be the receipts of that hour. chiod now answers the
// bounds it resolved, and the CLI asks every later page for those.
//
// Here every page is one receipt (the proxy asks chiod for limit=1) and
// chiod's clock moves two hours between pages.
func TestReceiptListPagesKeepTheFirstPagesTimeBounds(t *testing.T) {
	for _, c := range []struct {
		flags    []string
		withLate bool
	}{
		{[]string{"--since", "2h"}, true},
		{[]string{"--since", "2h", "--until", "30m"}, false},
		{[]string{"--since", "2h", "--until", "30m", "--order", "desc"}, false},
	} {
		url, ids, late := slidingClockWorld(t)
		want := ids
		if c.withLate {
			want = append(want, late)
		}
		args := append([]string{"receipt", "list", "--output", "jsonl"}, c.flags...)
		stdout, stderr, code := chioVia(url, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", c.flags, code, stderr)
		}
		got := strings.Count(stdout, "\n")
		missing := []string{}
		for _, id := range want {
			if !strings.Contains(stdout, id) {
				missing = append(missing, id)
			}
		}
		if got != len(want) || len(missing) > 0 {
			t.Errorf("%v over one-receipt pages while chiod's clock moves: listed %d receipts, want the %d that matched when the listing started (missing %v)\n%s",
				c.flags, got, len(want), missing, stderr)
		}
	}
}

// slidingClockWorld is a chiod with three receipts at one time and a
// fourth 40 minutes later, its clock an hour after the first three, behind
// a proxy that asks for one-receipt pages and moves chiod's clock two
// hours after each. It answers the proxy's URL and the receipt ids.
func slidingClockWorld(t *testing.T) (string, []string, string) {
	approver := keys.FromSeed(bytes.Repeat([]byte{27}, 32))
	start := time.Now().Add(-24 * time.Hour)
	fake := clock.NewFake(start)
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Clock: fake, Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	var ids []string
	for i := range 3 {
		out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", fmt.Sprintf(`{"x":%d}`, i), ""))
		if out.Status != kernel.StatusAllowed {
			t.Fatalf("call %d: %+v", i, out)
		}
		ids = append(ids, out.ReceiptID)
	}
	// Outside --until 30m when the listing starts (chiod's now is then
	// start+1h), inside it once chiod's clock has moved on.
	fake.Set(start.Add(40 * time.Minute))
	late := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":"late"}`, ""))
	if late.Status != kernel.StatusAllowed {
		t.Fatalf("late call: %+v", late)
	}
	fake.Set(start.Add(time.Hour))

	target, _ := url.Parse(tw.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/receipts" {
			proxy.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		q.Set("limit", "1")
		r.URL.RawQuery = q.Encode()
		proxy.ServeHTTP(w, r)
		fake.Advance(2 * time.Hour)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ids, late.ReceiptID
}
