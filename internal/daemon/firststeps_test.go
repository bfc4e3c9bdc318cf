package daemon_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/policy"
)

// The first call chiod prints at start-up names a grant the policy has,
// and a server and tool that grant covers: a newcomer who starts chiod on
// an example policy other than the quick start's can run it as printed.
// (It used to be the quick start's "--grant echo" and "chio call demo
// echo" whatever the policy, which every other policy refused.)
func TestFirstStepsNameThePolicysOwnGrant(t *testing.T) {
	grantFlag := regexp.MustCompile(`--grant (\S+)`)
	callLine := regexp.MustCompile(`chio call (\S+) (\S+) `)
	for _, name := range []string{"quickstart", "refund-escalation", "deploy-quorum", "db-writes", "payments-guarded"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "examples", "policies", name+".toml")
			p, err := policy.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			r := start(t, daemon.Options{ConfigPath: path, DataDir: t.TempDir()})
			out := r.out.String()
			g := grantFlag.FindStringSubmatch(out)
			c := callLine.FindStringSubmatch(out)
			if g == nil || c == nil {
				t.Fatalf("no capability issue or call line in:\n%s", out)
			}
			var grant *policy.Grant
			for i := range p.Grants {
				if p.Grants[i].ID == g[1] {
					grant = &p.Grants[i]
				}
			}
			if grant == nil {
				t.Fatalf("printed --grant %s, which %s does not have:\n%s", g[1], name, out)
			}
			if c[1] != grant.Server || (c[2] != grant.Tool && !strings.ContainsAny(grant.Tool, "*?[")) {
				t.Fatalf("printed chio call %s %s, but grant %s covers %s/%s:\n%s", c[1], c[2], grant.ID, grant.Server, grant.Tool, out)
			}
		})
	}
}
