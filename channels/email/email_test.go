package email

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
)

func testChannel(t *testing.T, now *time.Time) *Channel {
	t.Helper()
	c, err := New(&policy.Email{SMTPAddr: "127.0.0.1:1", From: "chio@example.com"}, Options{
		PublicURL: "http://127.0.0.1:7420/", Policy: func() *policy.Policy { return nil },
		Secret: bytes.Repeat([]byte{7}, 32), Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLinks(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	link := c.Link("ar-1", "ed25519:ab", now.Add(time.Hour))
	if !strings.HasPrefix(c.LinkURL(link), "http://127.0.0.1:7420/email/a/") {
		t.Fatalf("url %s", c.LinkURL(link))
	}
	cl, id, err := c.parseLink(link)
	if err != nil || cl.ApprovalID != "ar-1" || cl.Approver != "ed25519:ab" || id == "" {
		t.Fatalf("parse: %+v %v", cl, err)
	}
	if c.Link("ar-1", "ed25519:ab", now.Add(time.Hour)) == link {
		t.Fatal("two links for the same request are identical (no nonce)")
	}
	// Tampering with the claims or the MAC, or another secret, is refused.
	payload, mac, _ := strings.Cut(link, ".")
	other := testChannel(t, &now)
	other.secret = bytes.Repeat([]byte{8}, 32)
	// The MAC's tail is replaced by two characters it does not already end
	// with (a fixed "AA" equalled the real MAC one time in 4096).
	tail := "AA"
	if strings.HasSuffix(mac, tail) {
		tail = "BB"
	}
	for _, bad := range []string{payload + "x." + mac, payload + "." + mac[:len(mac)-2] + tail, payload, "", strings.Repeat("a", 2000)} {
		if bad == link {
			t.Fatalf("the tampered link %q equals the real one", bad)
		}
		if _, _, err := c.parseLink(bad); !errors.Is(err, errBadLink) {
			t.Fatalf("tampered %q: %v", bad, err)
		}
	}
	if _, _, err := other.parseLink(link); !errors.Is(err, errBadLink) {
		t.Fatalf("another secret: %v", err)
	}
	// One POST at a time; spent for good on success, free again on failure.
	if err := c.reserve(id, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.parseLink(link); !errors.Is(err, errBusyLink) {
		t.Fatalf("in flight: %v", err)
	}
	c.release(id)
	if _, _, err := c.parseLink(link); err != nil {
		t.Fatalf("released: %v", err)
	}
	_ = c.reserve(id, now.Add(time.Hour))
	c.spend(id)
	// The MAC's last base64 character carries spare bits: every other
	// spelling of it must be refused, not treated as a fresh link.
	for _, ch := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		alt := link[:len(link)-1] + string(ch)
		if alt == link {
			continue
		}
		if _, _, err := c.parseLink(alt); err == nil {
			t.Fatalf("variant %q of a spent link accepted", alt)
		}
	}
	if _, _, err := c.parseLink(link); !errors.Is(err, errUsedLink) {
		t.Fatalf("spent: %v", err)
	}
	// Expiry.
	l2 := c.Link("ar-2", "ed25519:ab", now.Add(time.Minute))
	now = now.Add(time.Minute)
	if _, _, err := c.parseLink(l2); !errors.Is(err, errExpiredLink) {
		t.Fatalf("expired: %v", err)
	}
}

// Agent-supplied text cannot inject headers.
func TestMessageHeaders(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	req := &approval.Request{ApprovalID: "ar-1", Summary: "refund\r\nBcc: evil@example.com\r\n\r\nhi", SubjectID: "ed25519:" + strings.Repeat("ab", 32),
		ToolServer: "pay", ToolName: "refund", PolicyID: "refunds", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		GovernedIntent: json.RawMessage(`{"purpose":"<b>x</b>","max_amount":{"units":450,"currency":"USD"}}`)}
	msg, err := c.message(req, recipient{key: "ed25519:ab", name: "Finance Lead", addr: "finance@example.com"}, "approval.requested")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.ReadMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("Bcc") != "" || !strings.Contains(m.Header.Get("Subject"), "refund") || m.Header.Get("To") != `"Finance Lead" <finance@example.com>` {
		t.Fatalf("headers: %v", m.Header)
	}
	if !strings.Contains(string(msg), "&lt;b&gt;x&lt;/b&gt;") {
		t.Fatal("the HTML part does not escape agent text")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	pol := func() *policy.Policy { return nil }
	for _, c := range []struct {
		cfg *policy.Email
		o   Options
	}{
		{nil, Options{PublicURL: "http://x", Policy: pol, Secret: make([]byte, 32)}},
		{&policy.Email{SMTPAddr: "nohost", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol, Secret: make([]byte, 32)}},
		{&policy.Email{SMTPAddr: "h:25", From: "a@b.c", UsernameEnv: "U"}, Options{PublicURL: "http://x", Policy: pol, Secret: make([]byte, 32)}},
		{&policy.Email{SMTPAddr: "h:25", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol, Secret: make([]byte, 8)}},
		{&policy.Email{SMTPAddr: "h:25", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol}},
	} {
		if _, err := New(c.cfg, c.o); err == nil {
			t.Fatalf("accepted %+v %+v", c.cfg, c.o)
		}
	}
	// The secret is created once in the data dir and read back.
	dir := t.TempDir()
	a, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol, DataDir: dir})
	if err != nil || !bytes.Equal(a.secret, b.secret) {
		t.Fatalf("secret not kept: %v", err)
	}
	// The secret forges approval links: once other users may read its
	// file, the channel refuses it rather than trust it.
	if err := os.Chmod(filepath.Join(dir, SecretFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"}, Options{PublicURL: "http://x", Policy: pol, DataDir: dir}); err == nil ||
		!strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a link secret others may read was accepted: %v", err)
	}
}

// email-link.key as a dangling symbolic link reads as missing, yet cannot
// be created (O_EXCL sees the link): New fails with a clear error rather
// than retrying forever.
func TestLinkSecretDanglingSymlinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, SecretFile)); err != nil {
		t.Skipf("symlink: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := New(&policy.Email{SMTPAddr: "h:25", From: "a@b.c"},
			Options{PublicURL: "http://x", Policy: func() *policy.Policy { return nil }, DataDir: dir})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "dangling symbolic link") {
			t.Fatalf("err = %v, want a dangling-link error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("New still running after 5 s: loadOrCreateSecret loops on a dangling link")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link's target was created: %v", err)
	}
}
