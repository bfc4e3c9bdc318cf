package email

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

// email-link.key was created in place (O_EXCL) and written after: a crash
// between the two, or before the write reached the disk, leaves it empty,
// and every later start failed ("is not a hex secret of ≥ 32 bytes") until
// someone deleted it. An empty file holds no secret, so no link was ever
// minted from it: it is replaced by a new secret, and the new one is
// written whole before it takes the name.
func TestEmptyLinkSecretLeftByACrashIsReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SecretFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"},
		Options{PublicURL: "http://x", Policy: func() *policy.Policy { return nil }, DataDir: dir})
	if err != nil {
		t.Fatalf("chiod cannot start after a crash left %s empty: %v", SecretFile, err)
	}
	if len(c.secret) < 32 {
		t.Fatalf("secret of %d bytes", len(c.secret))
	}
	again, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"},
		Options{PublicURL: "http://x", Policy: func() *policy.Policy { return nil }, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	link := c.Link("ar-0123456789", "ed25519:00", time.Now().Add(time.Hour))
	if _, _, err := again.parseLink(link); err != nil {
		t.Fatalf("the replacement secret was not kept: a link minted before a restart is refused after it: %v", err)
	}
}
