package daemon

// What chiod prints at start: where to connect and a first call to try.

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/chiokernel/chio/policy"
)

// connectAddr is the host:port to connect to chiod at: the bound address
// a, or for a wildcard listen (0.0.0.0, ::, or no host) a loopback address
// on the same port: [::1] when listen named an IPv6 host, else 127.0.0.1
// (Go binds 0.0.0.0 as a dual-stack ::, so a's family does not say). A
// wildcard binds every address but is none to connect to.
func connectAddr(listen string, a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	host, _, _ := net.SplitHostPort(listen)
	ip := "127.0.0.1"
	if strings.Contains(host, ":") {
		ip = "::1"
	}
	return net.JoinHostPort(ip, strconv.Itoa(tcp.Port))
}

// firstSteps is the start-up text; base is chiod's URL (scheme and host:port).
func firstSteps(base string, p *policy.Policy, adminPath, readPath, pidPath string) string {
	admin, read := "$CHIO_ADMIN_TOKEN", "$CHIO_READ_TOKEN"
	if adminPath != "" {
		admin = "$(cat " + adminPath + ")"
	}
	if readPath != "" {
		read = "$(cat " + readPath + ")"
	}
	return fmt.Sprintf(`
chiod is ready at %[1]s  (policy %[2]s)
First call, in another shell (in a checkout, chio is in bin/: export PATH=$PWD/bin:$PATH):
  export CHIO_URL=%[1]s CHIO_ADMIN_TOKEN=%[3]s
  mkdir -p agent && chio keygen --out agent/agent.pem
%[6]sApprovers and auditors read with CHIO_READ_TOKEN=%[4]s
Dashboard: %[1]s/dashboard/   Reload the policy: kill -HUP $(cat %[5]s)
See README.md "Quick start" for a denied and a pending call.
`, base, p.Source, admin, read, pidPath, firstCall(p))
}

// firstCall is the capability and the call chiod suggests first, from the
// policy it runs: the quick start's echo grant when the policy has one,
// else its first grant, so that the printed commands name a grant the
// policy has. Arguments are known only for echo; any other tool's are
// left for the reader to fill in.
func firstCall(p *policy.Policy) string {
	if len(p.Grants) == 0 {
		return ""
	}
	g := p.Grants[0]
	for _, c := range p.Grants {
		if c.Tool == "echo" {
			g = c
			break
		}
	}
	tool, args := g.Tool, `'{"hello":"world"}'`
	if tool != "echo" {
		args = `'{…}'`
	}
	if strings.ContainsAny(tool, "*?[\\") {
		tool = "TOOL" // a pattern grant: any tool it matches
	}
	return fmt.Sprintf(`  chio capability issue --subject $(chio keygen --show agent/agent.pem) --grant %s --ttl 1h --out agent/agent.cap
  chio call %s %s --args %s --capability agent/agent.cap --key agent/agent.pem
`, g.ID, g.Server, tool, args)
}
