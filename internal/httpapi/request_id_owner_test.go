package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const echoPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`

// heldStore holds the first commit after hold() until release sends
// what that commit should end with (nil: commit it).
type heldStore struct {
	kernel.Store
	armed   atomic.Bool
	reached chan struct{}
	release chan error
}

func (s *heldStore) hold() { s.armed.Store(true) }

func (s *heldStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		s.reached <- struct{}{}
		if err := <-s.release; err != nil {
			return err
		}
	}
	return s.Store.Update(ctx, fn)
}

type answer struct {
	code int
	body string
}

// A request id is one name for one call, whoever sent it (the tool server
// gets it as its idempotency key), so a call under another agent's id is
// refused. The refusal must tell that agent nothing about the other call:
// it is the one the id's owner gets for a different call under its id
// (409 conflict, same body), given at once — not after waiting for the
// other agent's call to be decided, and not that call's own error, which a
// call in flight used to hand to every caller of its id. The owner still
// gets its idempotent answer.
func TestAnotherAgentsRequestIDTellsNothing(t *testing.T) {
	hs := &heldStore{reached: make(chan struct{}), release: make(chan error)}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: echoPolicy, Grants: []string{"echo"}, Serve: true,
		WrapStore: func(s kernel.Store) kernel.Store { hs.Store = s; return hs }})
	other, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherCap, _, err := w.Kernel.IssueCapability(other.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	post := func(agent keys.PrivateKey, capRaw []byte, id, args string) answer {
		c := &kernel.ToolCall{RequestID: id, Capability: capRaw, Server: "demo", Tool: "echo", Arguments: json.RawMessage(args)}
		testkit.Sign(t, c, agent, time.Now())
		body, _ := json.Marshal(c)
		res, err := http.Post(w.URL+"/v1/calls", "application/json", bytes.NewReader(body))
		if err != nil {
			return answer{0, err.Error()}
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return answer{res.StatusCode, string(bytes.TrimSpace(b))}
	}
	const refused = `{"error":"conflict","message":"request_id already used for a different call"}`

	// While the owner's call is being decided (its commit held), and when
	// that call then fails without a record or succeeds.
	for i, commitErr := range []error{fmt.Errorf("%w: injected", kernel.ErrUnavailable), nil} {
		id := fmt.Sprintf("req-owned-%d", i)
		hs.hold()
		owner := make(chan answer, 1)
		go func() { owner <- post(w.Agent, w.CapRaw, id, `{"n":1}`) }()
		<-hs.reached
		theirs := make(chan answer, 1)
		go func() { theirs <- post(other, otherCap, id, `{"n":1}`) }()
		early := true
		var got answer
		select {
		case got = <-theirs:
		case <-time.After(10 * time.Second):
			early = false
		}
		hs.release <- commitErr
		if !early {
			got = <-theirs
		}
		ownerGot := <-owner
		if !early || got.code != http.StatusConflict || got.body != refused {
			t.Errorf("another agent's id %s in flight (the owner's commit then ending %v, the owner answered %d): answered only after the owner's call was decided: %v; %d %s, want at once 409 %s",
				id, commitErr, ownerGot.code, !early, got.code, got.body, refused)
		}
	}

	// Stored: the other agent gets what the owner gets for a different
	// call under its id; the owner's retry is answered from the record.
	id := "req-owned-1"
	for name, a := range map[string]answer{
		"another agent, same arguments":  post(other, otherCap, id, `{"n":1}`),
		"another agent, other arguments": post(other, otherCap, id, `{"n":2}`),
		"the owner, other arguments":     post(w.Agent, w.CapRaw, id, `{"n":2}`),
	} {
		if a.code != http.StatusConflict || a.body != refused {
			t.Errorf("%s: %d %s, want 409 %s", name, a.code, a.body, refused)
		}
	}
	if a := post(w.Agent, w.CapRaw, id, `{"n":1}`); a.code != http.StatusOK {
		t.Errorf("the owner's retry: %d %s, want its call's outcome", a.code, a.body)
	}
	rec, err := w.Kernel.Call(id)
	if err != nil || rec.Subject != w.Agent.Public().String() {
		t.Fatalf("the owner's record: %+v %v", rec, err)
	}
}

// An unknown id's proof is checked against a stand-in key (the same work
// as for another agent's id); the stand-in's seed is in the source, so a
// proof it signs must not admit anyone.
func TestStandInKeyAdmitsNobody(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: echoPolicy, Grants: []string{"echo"}, Serve: true})
	standIn := keys.FromSeed(make([]byte, 32))
	now := time.Now()
	for path, hdr := range map[string]string{
		"/v1/calls/req-unknown":        httpapi.SignStatusProof(standIn, "req-unknown", now),
		"/approvals/ar-unknown":        httpapi.SignStatusProof(standIn, "ar-unknown", now),
		"/approvals/ar-unknown/cancel": httpapi.SignCancelProof(standIn, "ar-unknown", "x", now),
	} {
		method, body := "GET", ""
		if strings.HasSuffix(path, "/cancel") {
			method, body = "POST", `{"reason":"x"}`
		}
		req, _ := http.NewRequest(method, w.URL+path, strings.NewReader(body))
		req.Header.Set(httpapi.StatusProofHeader, hdr)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with the stand-in key's proof: %d, want 401", method, path, res.StatusCode)
		}
	}
}
