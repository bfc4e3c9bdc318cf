package email

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// A link is spent by the vote it carried, and a spent link no longer shows
// the request (docs/approver.md: a forwarded link reads the request "until
// it is used"). Spent links were remembered in memory only: after a chiod
// restart the used link read the request again, its arguments and votes,
// until the request's deadline. The vote it carried is durable, in the
// request: that is what spends it.
func TestLinkSpentBeforeARestartStaysSpent(t *testing.T) {
	lead, _ := keys.Generate(nil)
	w := testkit.NewWorld(t, testkit.Options{
		PolicyTOML: fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")),
		Server:     "pay", Grants: []string{"deploys"}})
	out := w.Submit(t, "delete_file", `{"path":"/srv/secret-report.pdf"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	id := out.ApprovalRequestID
	now := time.Now()
	c := testChannel(t, &now)
	c.o.Policy = w.Kernel.Policy
	link := c.Link(id, lead.Public().String(), now.Add(time.Hour))
	srv := httptest.NewServer(c.Handler(w.Kernel))
	defer srv.Close()
	tok := w.Token(t, id, lead, approval.DecisionApproved, nil)
	res, err := http.Post(srv.URL+LinkPath+link, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the vote through the link: %d", res.StatusCode)
	}

	// chiod restarts: a new channel, the same link secret.
	restarted := testChannel(t, &now)
	restarted.o.Policy = w.Kernel.Policy
	srv2 := httptest.NewServer(restarted.Handler(w.Kernel))
	defer srv2.Close()
	for _, s := range []*httptest.Server{srv, srv2} {
		res, err := http.Get(s.URL + LinkPath + link)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusGone || strings.Contains(string(b), "secret-report") {
			t.Errorf("GET of the spent link (restarted: %v): %d %s; want 410 showing nothing", s == srv2, res.StatusCode, b)
		}
	}
}
