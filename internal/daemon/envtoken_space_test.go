package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

// A bearer token from the environment that holds white space or a control
// character (an env file saved with CRLF line ends, a quote's stray space,
// a pasted newline) is one no client can present: HTTP trims a header
// value's ends, so its requests never match and chiod answers them 401,
// saying nothing of why. chiod refuses to start, naming the variable (as
// it refuses such a channel secret), never the value. It used to start.
func TestEnvironmentTokenWithWhiteSpaceIsRefused(t *testing.T) {
	good := strings.Repeat("a1", 32)
	for name, bad := range map[string]string{
		"CRLF env file":    good + "\r",
		"trailing newline": good + "\n",
		"trailing space":   good + " ",
		"leading tab":      "\t" + good,
	} {
		for _, env := range []string{"CHIO_ADMIN_TOKEN", "CHIO_READ_TOKEN"} {
			vars := map[string]string{"CHIO_ADMIN_TOKEN": good, "CHIO_READ_TOKEN": strings.Repeat("r2", 32)}
			vars[env] = bad
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			served := make(chan struct{}, 1)
			err := daemon.Run(ctx, daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: t.TempDir(), Out: &syncBuffer{},
				Getenv: func(k string) string { return vars[k] },
				Ready:  func(string) { served <- struct{}{}; cancel() }})
			cancel()
			select {
			case <-served:
				t.Errorf("%s in %s: chiod started with a token no client can present (err at stop: %v)", name, env, err)
				continue
			default:
			}
			if err == nil || !strings.Contains(err.Error(), env) || !strings.Contains(err.Error(), "white space") {
				t.Errorf("%s in %s: err = %v, want a refusal naming %s and its white space", name, env, err, env)
			}
			if err != nil && strings.Contains(err.Error(), good) {
				t.Errorf("%s in %s: the refusal quotes the token: %v", name, env, err)
			}
		}
	}
}
