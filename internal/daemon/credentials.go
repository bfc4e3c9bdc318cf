package daemon

// The kernel key and the bearer tokens chiod loads or creates at start.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/chiokernel/chio/internal/atomicfile"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/secretfile"
)

// loadOrCreateKey loads the kernel key (refusing a file other users may
// read: secretfile.Read) or, when there is none, generates one (mode 0600).
func loadOrCreateKey(path string) (keys.PrivateKey, bool, error) {
	data, err := readOrForgetEmpty(path)
	if err == nil {
		k, err := keys.ParsePKCS8PEM(data)
		if err != nil {
			return keys.PrivateKey{}, false, fmt.Errorf("refusing to start: kernel key %s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return keys.PrivateKey{}, false, fmt.Errorf("refusing to start: kernel key: %w", err)
	}
	k, err := keys.Generate(rand.Reader)
	if err != nil {
		return keys.PrivateKey{}, false, err
	}
	pem, err := k.MarshalPKCS8PEM()
	if err != nil {
		return keys.PrivateKey{}, false, err
	}
	if err := atomicfile.Create(path, pem); err != nil {
		return keys.PrivateKey{}, false, fmt.Errorf("kernel key: %w", err)
	}
	return k, true, nil
}

// readOrForgetEmpty reads the secret file at path (secretfile.Read). An
// empty one is what a crash left between creating the file in place and
// writing it (chiods before atomicfile.Create): it holds no secret, and
// nothing was signed or served with one, so it is removed and reported
// missing, to be created again. (A data dir serves one chiod at a time.)
func readOrForgetEmpty(path string) ([]byte, error) {
	b, err := secretfile.Read(path)
	if err != nil || strings.TrimSpace(string(b)) != "" {
		return b, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return nil, os.ErrNotExist
}

// Token files in the data dir, written on first start when the
// environment does not set the token.
const (
	AdminTokenFile = "admin.token"
	ReadTokenFile  = "read.token"
)

// /metrics access (Options.MetricsAuth, chiod -metrics-auth).
const (
	MetricsAuthToken = "token"
	MetricsAuthNone  = "none"
)

// bearerToken returns the token in the environment variable env or, when
// it is unset, the one in dataDir/file, generated (mode 0600) on first
// start; path is that file ("" when the environment set the token). A
// token file other users may read is refused (secretfile.Read).
func bearerToken(getenv func(string) string, dataDir, env, file string, log *slog.Logger) (token, path string, err error) {
	if t := getenv(env); t != "" {
		// HTTP trims a header value's ends and carries no control
		// characters: such a token could never be presented, and every
		// request would be answered 401 with no word of why.
		if strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return "", "", fmt.Errorf("refusing to start: %s holds white space or control characters (a trailing newline, a CRLF env file): "+
				"set it to the token alone", env)
		}
		if len(t) < MinTokenLen {
			// Say how to make one: "changeme" is what a first try sets.
			return "", "", fmt.Errorf("refusing to start: %s is shorter than %d characters; make one with `openssl rand -hex 32`, "+
				"or unset it and chiod generates %s in its data dir", env, MinTokenLen, file)
		}
		return t, "", nil
	}
	path = filepath.Join(dataDir, file)
	if b, err := readOrForgetEmpty(path); err == nil {
		t := strings.TrimSpace(string(b))
		if len(t) < MinTokenLen {
			return "", "", fmt.Errorf("refusing to start: %s holds a token shorter than %d characters", path, MinTokenLen)
		}
		log.Info(env+" not set; using the token in "+file, "path", path)
		return t, path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("refusing to start: %s: %w", env, err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	t := hex.EncodeToString(b[:])
	// Never replacing a token someone wrote meanwhile; whole or missing
	// after a crash. Its name is made durable before serving too
	// (files.syncEntries).
	if err := atomicfile.Create(path, []byte(t+"\n")); err != nil {
		return "", "", fmt.Errorf("%s: %w", env, err)
	}
	log.Info(env+" not set; generated a token", "path", path)
	return t, path, nil
}
