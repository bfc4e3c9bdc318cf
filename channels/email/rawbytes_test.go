package email

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// oneRequest is a Kernel holding one approval request.
type oneRequest struct{ req *approval.Request }

func (k oneRequest) Approval(string) (*approval.Request, error) { return k.req, nil }
func (oneRequest) Respond(context.Context, string, []byte, string, string) (*kernel.RespondResult, error) {
	return nil, kernel.ErrNotFound
}

// An email link's JSON view carries the request's arguments as the tool
// receives them, as chiod's own answers do: '<', '>' and '&' as they are,
// not rewritten as \u003c, \u003e and \u0026.
func TestLinkViewKeepsTheArgumentsBytes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	const args = `{"q":"<b>a&b</b>"}`
	k := oneRequest{&approval.Request{ApprovalID: "ar-1", Status: "pending", Arguments: json.RawMessage(args)}}
	approver := trustedBy(t, c, k.req)
	srv := httptest.NewServer(c.Handler(k))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+LinkPath+c.Link("ar-1", approver, now.Add(time.Hour)), nil)
	req.Header.Set("Accept", "application/json")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if !strings.Contains(string(body), `"arguments":`+args) {
		t.Fatalf("the arguments' bytes were rewritten: %s", body)
	}
}
