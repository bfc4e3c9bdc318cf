package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// The API answers with the bytes the kernel holds: what an approver is
// shown of a call's arguments (GET /approvals/{id}) is what the tool
// receives, and the output an agent is given (GET /v1/calls/{id}) is the
// tool's. encoding/json's default HTML escaping would write '<', '>' and
// '&' inside these json.RawMessage members as \u003c, \u003e and \u0026:
// `chio approval show` then prints "\u003crefund\u003e" where the tool
// receives "<refund>", and `chio await` prints output the tool never wrote.
func TestAnswersKeepRawBytes(t *testing.T) {
	f := newApprovalsFixture(t)
	const args = `{"amount":450,"currency":"USD","memo":"<refund> & co"}`
	out := f.submit(t, keyAgent, "refund", args, `{"purpose":"refund <A&B>","max_amount":{"units":450,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("want pending, got %+v", out)
	}
	get := func(method, path, body string, hdr map[string]string) string {
		t.Helper()
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return string(data)
	}
	shown := get("GET", "/approvals/"+out.ApprovalRequestID, "", withBearer(approvalsReader))
	if !strings.Contains(shown, `"arguments":`+args) || !strings.Contains(shown, `"purpose":"refund <A&B>"`) {
		t.Errorf("GET /approvals/{id} shows the arguments and intent re-encoded, not as the tool receives them (%s):\n%s", args, shown)
	}
	tok := f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil)
	get("POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil)
	// The output is the agent's and token holders' (the respond answer
	// carries none: respond_output_test.go).
	answer := get("GET", "/v1/calls/"+out.RequestID, "", withBearer(approvalsReader))
	if want := `"output":{"done":` + args + `}`; !strings.Contains(answer, want) {
		t.Errorf("the call status re-encodes the tool's output; want %s in:\n%s", want, answer)
	}
}
