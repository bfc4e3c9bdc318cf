package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key or capability path that names no file (a typo, a shell in another
// directory than the quick start's) says which file is missing and which
// command makes one, not only the operating system's "no such file".
func TestMissingKeyOrCapabilityFileSaysWhatMakesIt(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.pem")
	if _, se, code := chio(nil, "keygen", "--out", key); code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, se)
	}
	capFile := filepath.Join(dir, "agent.cap")
	if err := os.WriteFile(capFile, []byte(`{"id":"cap-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	noKey, noCap := filepath.Join(dir, "nokey.pem"), filepath.Join(dir, "nocap.cap")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--url", "http://127.0.0.1:1", "call", "demo", "echo", "--args", "{}", "--capability", capFile, "--key", noKey},
			[]string{noKey, "chio keygen --out"}},
		{[]string{"--url", "http://127.0.0.1:1", "approval", "approve", "ar-1", "--key", noKey},
			[]string{noKey, "chio keygen --out"}},
		{[]string{"keygen", "--show", noKey},
			[]string{noKey, "chio keygen --out"}},
		{[]string{"--url", "http://127.0.0.1:1", "call", "demo", "echo", "--args", "{}", "--capability", noCap, "--key", key},
			[]string{noCap, "chio capability issue"}},
	} {
		_, se, code := chio(nil, c.args...)
		for _, w := range c.want {
			if code == 0 || !strings.Contains(se, w) {
				t.Errorf("%q: exit %d, stderr %q; want it to contain %q", c.args, code, se, w)
			}
		}
	}
}
