package chio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	chio "github.com/chiokernel/chio/sdk"
)

// docs/agent-developer.md: "Give your own ids to make a whole run
// replayable: a restarted run that repeats CallTool with the same id and
// content gets the stored outcome ... not a second execution. The same id
// with different content is chio.ErrConflict", and only "an id another
// agent key used first is refused to you". A run that restarts after its
// capability was renewed (same agent key, same call, new capability id —
// capabilities are short-lived and re-issued) got ErrConflict instead of
// its stored outcome, i.e. was told its id names a DIFFERENT call; the
// natural reaction (a fresh id) ran the tool a second time.
func TestReplayAfterCapabilityRenewalGetsTheStoredOutcome(t *testing.T) {
	ctx := context.Background()
	first, err := chio.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	id := "renewal-" + first.PublicKey()[8:24]
	call := chio.Call{Server: "demo", Tool: "echo", Arguments: map[string]any{"msg": "pay once"}, RequestID: id}
	res, err := first.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(*chio.Allowed); !ok {
		t.Fatalf("first call: %#v", res)
	}
	// The operator renews the agent's capability (same key, same grants).
	body, _ := json.Marshal(map[string]any{"subject": first.PublicKey(),
		"grants": []string{"echo", "refunds", "files", "confirm", "ask"}, "ttl": "1h"})
	req, _ := http.NewRequest("POST", os.Getenv("CHIO_URL")+"/v1/capabilities", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer example-admin-token-0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Capability json.RawMessage `json:"capability"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 201 {
		t.Fatalf("issue: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	restarted, err := chio.NewClient(os.Getenv("CHIO_URL"), chio.WithKeyFile(os.Getenv("CHIO_KEY")), chio.WithCapability(out.Capability))
	if err != nil {
		t.Fatal(err)
	}
	res, err = restarted.CallTool(ctx, call)
	if err != nil {
		t.Fatalf("the same agent key replaying the same step (same id, same content) after a capability renewal: %v; "+
			"want the stored outcome (the docs reserve ErrConflict for other content or another agent key)", err)
	}
	if _, ok := res.(*chio.Allowed); !ok {
		t.Fatalf("replay: %#v", res)
	}
}
