//go:build unix

package daemon_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
)

// runBriefly runs chiod with o; it returns Run's error if chiod refused to
// start, or nil (after stopping it) if chiod started and served.
func runBriefly(t *testing.T, o daemon.Options) error {
	t.Helper()
	o.Listen, o.Out = "127.0.0.1:0", io.Discard
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{}, 1)
	o.Ready = func(string) { ready <- struct{}{} }
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, o) }()
	select {
	case err := <-done:
		return err
	case <-ready:
		cancel()
		<-done
		return nil
	case <-time.After(20 * time.Second):
		t.Fatal("chiod neither started nor refused")
		return nil
	}
}

// wantRefusedForMode wants chiod refused to start because of path's mode,
// with an error that names the file and says how to fix it.
func wantRefusedForMode(t *testing.T, err error, path string) {
	t.Helper()
	if err == nil {
		t.Fatalf("chiod started with %s readable by other users", filepath.Base(path))
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "chmod 600 "+path) {
		t.Fatalf("error does not name %s and the fix: %v", path, err)
	}
}

// SPEC §2: a private key file is mode 0600. kernel.pem signs every receipt
// and capability: one that other local users can read lets them mint
// capabilities for any grant and forge receipts, so chiod refuses it (as
// sshd refuses such a key) for every group/other bit, and leaves it as is.
func TestDaemonRefusesKernelKeyOthersCanRead(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o660} {
		dir := t.TempDir()
		k, _ := keys.Generate(nil)
		path := filepath.Join(dir, "kernel.pem")
		if err := keys.WritePrivateKey(path, k); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		wantRefusedForMode(t, runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}), path)
		if got, err := keys.LoadPrivateKey(path); err != nil || !got.Public().Equal(k.Public()) {
			t.Fatalf("mode %#o: the refused key was replaced: %v", mode, err)
		}
	}
	// The same key, 0600 (or stricter), is used.
	dir := t.TempDir()
	k, _ := keys.Generate(nil)
	path := filepath.Join(dir, "kernel.pem")
	if err := keys.WritePrivateKey(path, k); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
		t.Fatalf("a 0400 kernel.pem: %v", err)
	}
}

// The token files likewise: whoever reads admin.token is the admin (issues
// capabilities, revokes, cancels); read.token reads every receipt and
// pending approval.
func TestDaemonRefusesTokenFilesOthersCanRead(t *testing.T) {
	for _, file := range []string{daemon.AdminTokenFile, daemon.ReadTokenFile} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, file)
			if err := os.WriteFile(path, []byte(strings.Repeat(file[:1], 64)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			wantRefusedForMode(t, runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}), path)
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
				t.Fatalf("after chmod 600: %v", err)
			}
		})
	}
}

// Everything chiod writes itself (kernel key, tokens) is 0600, so the next
// start accepts it.
func TestDaemonWritesSecretFilesOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kernel.pem", daemon.AdminTokenFile, daemon.ReadTokenFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi.Mode(), err)
		}
	}
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
		t.Fatalf("second start: %v", err)
	}
}

// The TLS private key is a secret like kernel.pem: whoever reads it can
// pose as chiod to every client and approver, and read the bearer tokens
// they send. One that other users may read refuses the start, before
// anything is written, and is left as it is; at 0600 chiod serves HTTPS.
func TestDaemonRefusesTLSKeyOthersCanRead(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := filepath.Join(certs, "cert.pem"), filepath.Join(certs, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "[kernel]\n",
		fmt.Sprintf("[kernel]\ntls_cert_file = %q\ntls_key_file = %q\n", certFile, keyFile), 1)
	cfg := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(keyFile, mode); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		wantRefusedForMode(t, runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir}), keyFile)
		wantSameContent(t, dir, map[string]string{})
		if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("the refused start changed the TLS key's mode: %v %v", fi.Mode(), err)
		}
	}
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: t.TempDir()}); err != nil {
		t.Fatalf("TLS key at 0600: %v", err)
	}
}

// A data dir that other users may write to lets them replace kernel.pem,
// the token files or chio.db (rename needs only the directory), or plant
// their own before the first start: a token they chose would be the
// admin's. chiod refuses such a dir, as sshd refuses a key under a
// directory others can write, before it writes anything there.
func TestDaemonRefusesDataDirOthersCanWrite(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, os.ModeSticky | 0o777, 0o702} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
		if err == nil {
			t.Fatalf("chiod started on a data dir of mode %#o", mode)
		}
		if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "chmod 700 "+dir) {
			t.Fatalf("error does not name %s and the fix: %v", dir, err)
		}
		wantSameContent(t, dir, map[string]string{})
	}
	// Owner-only, or readable by others (the files in it are 0600): served.
	for _, mode := range []os.FileMode{0o700, 0o755} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
			t.Fatalf("data dir of mode %#o: %v", mode, err)
		}
	}
}
