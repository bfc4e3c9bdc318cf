package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// chiod passes its clock to buildChannels, but the webhook channel is built
// without it: sent_at (the only freshness a signed delivery carries) comes
// from the wall clock, not from the kernel's clock that decides every other
// time (deadlines, token windows, receipts).
func TestWebhookSentAtComesFromInjectedClock(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n\n[channels.webhook]\nurl = \""+srv.URL+"\"\n"), "wh.toml")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	key := keys.FromSeed(make([]byte, 32))
	pc, err := buildChannels(p, key, t.TempDir(), clk, slog.New(slog.DiscardHandler), func() *policy.Policy { return p }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.close()
	var wh interface {
		Deliver(context.Context, string, *approval.Request) error
	}
	for _, c := range pc.list {
		if c.Name() == "webhook" {
			wh = c
		}
	}
	if wh == nil {
		t.Fatal("no webhook channel")
	}
	if err := wh.Deliver(context.Background(), "approval.requested", &approval.Request{ApprovalID: "ar-x"}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		SentAt int64 `json:"sent_at"`
	}
	if err := json.Unmarshal(<-got, &body); err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().UnixMilli(); body.SentAt != want {
		t.Fatalf("sent_at = %d (wall clock), want the injected clock's %d", body.SentAt, want)
	}
}
