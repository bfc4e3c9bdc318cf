package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// askedKernel stands for the kernel behind the link page and records that
// it was asked: an expired link must be refused before that.
type askedKernel struct{ asked bool }

func (k *askedKernel) Approval(string) (*approval.Request, error) {
	k.asked = true
	return nil, errors.New("the kernel was asked about an expired link")
}

func (k *askedKernel) Respond(context.Context, string, []byte, string, string) (*kernel.RespondResult, error) {
	k.asked = true
	return nil, errors.New("the kernel was asked about an expired link")
}

// chiod passes its clock to buildChannels, but the email channel was built
// without it: whether a link has expired was judged by the wall clock,
// while the request's deadline that the link carries is the kernel's. On
// an injected clock past a link's expiry, the link still opened.
func TestEmailLinkExpiryComesFromInjectedClock(t *testing.T) {
	p, err := policy.Parse([]byte("[kernel]\npublic_url = \"http://127.0.0.1:7420\"\n\n"+
		"[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n\n"+
		"[channels.email]\nsmtp_addr = \"127.0.0.1:1\"\nfrom = \"chio@example.com\"\n"), "email.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's clock is a day ahead of the wall clock.
	clk := clock.NewFake(time.Now().Add(24 * time.Hour))
	pc, err := buildChannels(p, keys.FromSeed(make([]byte, 32)), t.TempDir(), clk, slog.New(slog.DiscardHandler),
		func() *policy.Policy { return p }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.close()
	if pc.email == nil {
		t.Fatal("no email channel")
	}
	// A link whose deadline has passed on the kernel's clock (an hour ago),
	// though not on the wall clock.
	link := pc.email.Link("ar-x", "ed25519:ab", clk.Now().Add(-time.Hour))
	k := &askedKernel{}
	rec := httptest.NewRecorder()
	pc.email.Handler(k).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, pc.email.LinkURL(link), nil))
	if rec.Code != http.StatusGone || k.asked {
		t.Fatalf("a link expired on the kernel's clock answered %d, want 410 Gone (kernel asked: %v): %s", rec.Code, k.asked, rec.Body)
	}
}
