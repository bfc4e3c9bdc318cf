package daemon_test

import (
	"net"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// listen = "0.0.0.0:…" (or "[::]:…") binds every address, and the start-up
// text printed that wildcard as chiod's URL: "ready at
// http://0.0.0.0:7420", CHIO_URL and the dashboard link with it. A wildcard
// is not an address to connect to (browsers refuse it, and no TLS
// certificate names it): the text names the loopback address of the same
// family, on the bound port, instead.
func TestFirstStepsNameLoopbackForAWildcardListen(t *testing.T) {
	for listen, host := range map[string]string{"0.0.0.0:0": "127.0.0.1", "[::]:0": "[::1]"} {
		t.Run(listen, func(t *testing.T) {
			if strings.HasPrefix(listen, "[") {
				if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
					t.Logf("no IPv6 loopback here (%v): the case is the IPv4 one only", err)
					return
				} else {
					ln.Close()
				}
			}
			r := start(t, daemon.Options{DataDir: t.TempDir(), Listen: listen})
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.url, "http://"))
			want := "http://" + host + ":" + port
			out := r.out.String()
			for _, line := range []string{"chiod is ready at " + want + " ", "export CHIO_URL=" + want + " ", "Dashboard: " + want + "/dashboard/"} {
				if !strings.Contains(out, line) {
					t.Errorf("start-up text lacks %q:\n%s", line, out)
				}
			}
		})
	}
}
