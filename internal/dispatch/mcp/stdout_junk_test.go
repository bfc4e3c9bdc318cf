package mcp

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/policy"
)

// A stdio server that prints a line that is not JSON on stdout (a
// library's console.log, a banner) breaks the protocol: the session ends
// and the call in flight settles as maybe delivered. The error said only
// "invalid character 'P' looking for beginning of value", which names
// neither the stray line nor that stdout is the protocol channel: the
// operator reading "mcp server down" could not tell what to fix. The
// call's error and the log say what the server wrote, and where it should
// have gone.
func TestStdioServerLineThatIsNotJSONIsNamed(t *testing.T) {
	var logs lockedBuffer
	o := fastOptions()
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	s := startSet(t, o, policy.Server{ID: "junky", Command: stdioPeer(t, "junk")})
	u, _ := s.Upstream("junky")
	starts := u.Starts()
	_, err := dispatch(s, "req-junk", "junky", "pay", `{}`)
	const want = `not JSON-RPC on stdout: "Paying 5 EUR..."`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the call's error is %v; want it to name the stray line (%s)", err, want)
	}
	mcptest.Eventually(t, 10*time.Second, "the server to be restarted", func() bool {
		return u.Ready() && u.Starts() > starts
	})
	if !strings.Contains(logs.String(), strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("the log does not name the stray line (%s):\n%s", want, logs.String())
	}
}
