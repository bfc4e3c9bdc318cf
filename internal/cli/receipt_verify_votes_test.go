package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A two-person rule (quorum = 2), decided by two trusted
// approvers on a real kernel over bbolt, exported through the real CLI.
const twoPersonPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"

[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "CFO"
`

type twoPersonWorld struct {
	*auditWorld
	kkey     keys.PrivateKey
	lead     keys.PrivateKey
	cfo      keys.PrivateKey
	approval string // approval request id of the two-person approved call
}

func newTwoPersonWorld(t *testing.T) *twoPersonWorld {
	t.Helper()
	dir := t.TempDir()
	kkey := keys.FromSeed(bytes.Repeat([]byte{31}, 32))
	lead := keys.FromSeed(bytes.Repeat([]byte{32}, 32))
	cfo := keys.FromSeed(bytes.Repeat([]byte{33}, 32))
	agent := keys.FromSeed(bytes.Repeat([]byte{34}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(twoPersonPolicy, lead.Public(), cfo.Public()), PolicyName: "q.toml",
		DataDir: dir, KernelKey: testkit.Key(kkey), Agent: testkit.Key(agent), Grants: []string{"deploys"},
		Log: receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour}), Serve: true, AdminToken: "admin", ReadToken: "reader"})
	tc := &kernel.ToolCall{RequestID: "deploy-1", Capability: tw.CapRaw, Server: "demo", Tool: "echo", Arguments: json.RawMessage(`{"x":1}`)}
	testkit.Sign(t, tc, agent, time.Now())
	out := tw.SubmitCall(t, tc)
	if out.ApprovalRequestID == "" {
		t.Fatalf("the call was not parked: %+v", out)
	}
	for _, k := range []keys.PrivateKey{lead, cfo} {
		raw := tw.Token(t, out.ApprovalRequestID, k, approval.DecisionApproved, nil)
		if _, err := tw.Kernel.Respond(context.Background(), out.ApprovalRequestID, raw, "", kernel.ChannelAPI); err != nil {
			t.Fatal(err)
		}
	}
	return &twoPersonWorld{auditWorld: &auditWorld{url: tw.URL, dir: dir, kernelKey: kkey.Public()},
		kkey: kkey, lead: lead, cfo: cfo, approval: out.ApprovalRequestID}
}

// exportAndPin saves chiod's checkpoint (the auditor's pin) and an export.
func (w *twoPersonWorld) exportAndPin(t *testing.T) (exportFile, pinFile string) {
	t.Helper()
	pinFile = filepath.Join(w.dir, "cp.json")
	if out, errOut, code := w.chio(t, "receipt", "checkpoint", "--out", pinFile, "--kernel-key", w.kernelKey.String()); code != 0 {
		t.Fatalf("checkpoint: %d %s %s", code, out, errOut)
	}
	exportFile = filepath.Join(w.dir, "audit.jsonl")
	if out, errOut, code := w.chio(t, "receipt", "export", "--out", exportFile); code != 0 {
		t.Fatalf("export: %d %s %s", code, out, errOut)
	}
	out, _, code := w.chio(t, "receipt", "verify", "--file", exportFile, "--checkpoint", pinFile, "--kernel-key", w.kernelKey.String())
	if code != 0 || !strings.Contains(out, "OK: every check passed") {
		t.Fatalf("the honest export does not verify: %d\n%s", code, out)
	}
	return exportFile, pinFile
}

// editEvidence rewrites the approval evidence line of the export.
func editEvidence(t *testing.T, file string, edit func(ev *receipt.ApprovalEvidence)) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	found := false
	for i, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"type":"approval"`)) {
			continue
		}
		var ev receipt.ApprovalEvidence
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		edit(&ev)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
		lines[i] = bytes.TrimRight(buf.Bytes(), "\n")
		found = true
	}
	if !found {
		t.Fatal("no approval evidence in the export")
	}
	out := filepath.Join(filepath.Dir(file), "tampered.jsonl")
	if err := os.WriteFile(out, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// Whoever holds the export drops one of the two votes of a two-person
// approval. The final allow receipt, signed by the kernel, names both
// approvers (metadata "approvers"): the offline verification (pinned to an
// independently saved checkpoint) must notice the second person's signed
// token is gone.
func TestVerifyFailsWhenAQuorumVoteIsDroppedFromTheExport(t *testing.T) {
	w := newTwoPersonWorld(t)
	file, pin := w.exportAndPin(t)
	leadKey := w.lead.Public().String()
	tampered := editEvidence(t, file, func(ev *receipt.ApprovalEvidence) {
		kept := ev.Votes[:0]
		for _, v := range ev.Votes {
			if v.Approver != leadKey {
				kept = append(kept, v)
			}
		}
		if len(kept) != len(ev.Votes)-1 {
			t.Fatalf("evidence votes: %+v", ev.Votes)
		}
		ev.Votes = kept
	})
	out, _, code := w.chio(t, "receipt", "verify", "--file", tampered, "--checkpoint", pin, "--kernel-key", w.kernelKey.String())
	if code == 0 {
		t.Fatalf("an export missing one of the two approvals of a quorum-2 call verifies OK (the signed allow receipt names both approvers):\n%s", out)
	}
	if want := "receipt names " + leadKey + " in approvers, but the approval evidence for " + w.approval; !strings.Contains(out, want) ||
		!strings.Contains(out, "a counted vote is missing from the export") {
		t.Fatalf("the failure does not say which signed vote is missing (want %q):\n%s", want, out)
	}
}

// Whoever holds the export adds a vote signed by a key of their own and
// lists that key in trusted_approvers (an unsigned field of the export).
// "Trusted" must not be whatever the file says: no signed receipt names
// that key, so the verification fails.
func TestVerifyFailsOnAVoteNoSignedReceiptNames(t *testing.T) {
	w := newTwoPersonWorld(t)
	file, pin := w.exportAndPin(t)
	mallory := keys.FromSeed(bytes.Repeat([]byte{66}, 32))
	tampered := editEvidence(t, file, func(ev *receipt.ApprovalEvidence) {
		var tok approval.Token
		if err := json.Unmarshal(ev.Votes[0].Token, &tok); err != nil {
			t.Fatal(err)
		}
		tok.ID, tok.Approver, tok.Decision, tok.Signature = "at-mallory", mallory.Public().String(), approval.DecisionDenied, ""
		raw, err := tok.Sign(mallory)
		if err != nil {
			t.Fatal(err)
		}
		ev.TrustedApprovers = append(ev.TrustedApprovers, mallory.Public().String())
		ev.Votes = append(ev.Votes, receipt.EvidenceVote{Approver: mallory.Public().String(), Token: raw})
	})
	out, _, code := w.chio(t, "receipt", "verify", "--file", tampered, "--checkpoint", pin, "--kernel-key", w.kernelKey.String())
	if code == 0 {
		t.Fatalf("an export with a vote from a key the policy never trusted (added to the export's own unsigned trusted_approvers) verifies OK:\n%s", out)
	}
	if want := "token at-mallory by " + mallory.Public().String() + " is accounted for by no signed receipt"; !strings.Contains(out, want) {
		t.Fatalf("the failure does not name the unaccounted vote (want %q):\n%s", want, out)
	}
}
