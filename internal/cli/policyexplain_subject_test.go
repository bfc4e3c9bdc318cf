package cli_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A grant whose conditions read `subject` decides by who calls: explain
// and test without a subject must not answer for "any agent". They used
// to evaluate the conditions with an empty subject and print "allow ... by
// any agent" for a call chiod denies the very agent the condition names.
func TestPolicyExplainSubjectConditionNeedsSubject(t *testing.T) {
	agent, err := keys.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	text := anyToolPolicy + `deny_when = "subject == '` + agent.Public().String() + `'"` + "\n"
	text = strings.Replace(text, "tool = \"*\"\n", "tool = \"*\"\n[grants.constraints]\n", 1)
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: text, Server: "api", Grants: []string{"api-all"}, Agent: testkit.Key(agent)})
	out, err := w.Kernel.Submit(context.Background(), w.Call(t, "lookup", "{}", ""))
	if err != nil || out.Status != kernel.StatusDenied || out.Guard != kernel.GuardDenyWhen {
		t.Fatalf("premise: chiod denies this agent by deny_when; got %+v, %v", out, err)
	}
	pf := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(pf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// With the agent's key, explain agrees with chiod.
	if x := explain(t, pf, "--server", "api", "--tool", "lookup", "--subject", agent.Public().String()); x.Outcome.Verdict != "deny" {
		t.Fatalf("explain with --subject: %s, chiod denies", x.Outcome.Verdict)
	}
	// Without it, explain cannot know: it must say so, not "allow".
	so, se, code := chio(nil, "policy", "explain", pf, "--server", "api", "--tool", "lookup")
	if code != cli.ExitUsage || !strings.Contains(se, "--subject") {
		t.Fatalf("explain without --subject answered for any agent (chiod denies %s): exit %d\n%s%s", agent.Public(), code, so, se)
	}
	// And a test case without subject fails rather than passing "allow".
	cf := writeCases(t, "[[cases]]\nserver = \"api\"\ntool = \"lookup\"\nexpect = \"allow\"\n")
	so, se, code = chio(nil, "policy", "test", cf, "--policy", pf)
	if code != cli.ExitError || !strings.Contains(so, "FAIL") {
		t.Fatalf("a case without subject passed as allow (chiod denies %s): exit %d\n%s%s", agent.Public(), code, so, se)
	}
}
