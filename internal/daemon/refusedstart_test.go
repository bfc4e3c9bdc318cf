//go:build unix

package daemon_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
)

// A refused start changes nothing in the data dir: no kernel.pem, token,
// store or channel file is left for a later start to pick up and trust,
// and what was there stays byte for byte.

// A chio.db of another kernel, beside a kernel.pem of another key (an
// operator who copied the wrong file in): boltstore refuses the key, and
// the start leaves no token files behind.
func TestRefusedStartLeavesDataDirAsItWasOnBboltKeyMismatch(t *testing.T) {
	prod := t.TempDir()
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: prod}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyInto(t, filepath.Join(prod, "chio.db"), filepath.Join(dir, "chio.db"))
	other, err := keys.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePrivateKey(filepath.Join(dir, "kernel.pem"), other); err != nil {
		t.Fatal(err)
	}
	before := dirContent(t, dir)
	err = runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
	if !errors.Is(err, boltstore.ErrKeyMismatch) {
		t.Fatalf("a chio.db of another kernel: %v, want ErrKeyMismatch", err)
	}
	wantSameContent(t, dir, before)
}

// A fresh data dir pointed at the database of another deployment:
// PostgreSQL refuses the kernel key it made, and the start leaves neither
// that kernel.pem nor token files (nor the data dir it created) behind.
func TestRefusedStartLeavesDataDirAsItWasOnPostgresKeyMismatch(t *testing.T) {
	t.Setenv("CHIO_TEST_DSN", pgtest.Database(t))
	cfg := policyWith(t, "[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_TEST_DSN\"\n")
	if err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "chio-data")
	err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if !errors.Is(err, pgstore.ErrKeyMismatch) {
		t.Fatalf("a fresh data dir on another deployment's database: %v, want ErrKeyMismatch", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refused start left its data dir behind, holding %v", names(dirContent(t, dir)))
	}

	// A data dir that existed (empty, say a mounted volume) stays, empty.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	err = runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if !errors.Is(err, pgstore.ErrKeyMismatch) {
		t.Fatalf("again, on an existing empty data dir: %v, want ErrKeyMismatch", err)
	}
	wantSameContent(t, dir, map[string]string{})
}

// A start refused after the store was created (here: a Slack channel
// whose bot token is not set) removes the store, key, tokens and tool
// state it created on the way.
func TestRefusedStartLeavesDataDirAsItWasOnChannelRefusal(t *testing.T) {
	cfg := policyWith(t, "[channels.slack]\nchannel = \"C0123456789\"\n"+
		"bot_token_env = \"CHIO_TEST_UNSET_BOT_TOKEN\"\nsigning_secret_env = \"CHIO_TEST_UNSET_SIGNING_SECRET\"\n")
	dir := t.TempDir()
	err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "CHIO_TEST_UNSET_BOT_TOKEN") {
		t.Fatalf("a Slack channel without its bot token: %v, want a refusal naming the variable", err)
	}
	wantSameContent(t, dir, map[string]string{})
}

// A [kernel] tls_cert_file that cannot be read refuses the start before
// anything is written. (It used to be read only once chiod had said it was
// serving, and had written its key, tokens and store.) A readable one
// serves HTTPS.
func TestRefusedStartOnUnreadableTLSCertificate(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := filepath.Join(certs, "cert.pem"), filepath.Join(certs, "key.pem")
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
	dir := t.TempDir()
	err = runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to start: ") || !strings.Contains(err.Error(), "tls_cert_file") {
		t.Fatalf("a missing TLS certificate: %v, want a refusal naming tls_cert_file", err)
	}
	wantSameContent(t, dir, map[string]string{})

	writeSelfSigned(t, certFile, keyFile)
	r := start(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(strings.Replace(r.url, "http://", "https://", 1) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz over TLS: %d (TLS %v)", resp.StatusCode, resp.TLS != nil)
	}
}

func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A fresh data dir on a new PostgreSQL database, refused for an unset
// Slack secret: the refusal comes before the database records the kernel
// key the start made, so that key is removed too, and the next start
// (here with another data dir) is not bound to it.
func TestRefusedStartOnPostgresBindsNoKernelKey(t *testing.T) {
	t.Setenv("CHIO_TEST_DSN", pgtest.Database(t))
	store := "[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_TEST_DSN\"\n"
	slack := policyWith(t, store+"[channels.slack]\nchannel = \"C0123456789\"\n"+
		"bot_token_env = \"CHIO_TEST_UNSET_BOT_TOKEN\"\nsigning_secret_env = \"CHIO_TEST_UNSET_SIGNING_SECRET\"\n")
	dir := t.TempDir()
	err := runBriefly(t, daemon.Options{ConfigPath: slack, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "CHIO_TEST_UNSET_BOT_TOKEN") {
		t.Fatalf("a Slack channel without its bot token: %v, want a refusal naming the variable", err)
	}
	wantSameContent(t, dir, map[string]string{})
	if err := runBriefly(t, daemon.Options{ConfigPath: policyWith(t, store), DataDir: t.TempDir()}); err != nil {
		t.Fatalf("the next start, on the database the refused start saw: %v", err)
	}
}

// policyWith is the quick start's policy with extra appended.
func policyWith(t *testing.T, extra string) string {
	t.Helper()
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(path, append(b, "\n"+extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirContent maps every path under dir to its bytes ("dir/" for a
// directory).
func dirContent(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			m[rel] = "dir/"
			return nil
		}
		b, err := os.ReadFile(path)
		m[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantSameContent(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := dirContent(t, dir)
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("the refused start removed %s", name)
		} else if a != b {
			t.Errorf("the refused start changed %s", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("the refused start left %s behind", name)
		}
	}
}

func names(m map[string]string) []string {
	var s []string
	for n := range m {
		s = append(s, n)
	}
	return s
}
