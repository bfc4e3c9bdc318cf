package email

// The link secret: email-link.key in the data dir.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chiokernel/chio/internal/secretfile"
)

// loadOrCreateSecret reads the link secret at path, creating it when it
// is missing. If another process creates it between the read and the
// create, it is read once more, and only once: a path that reads as
// missing yet cannot be created (a dangling symbolic link) is an error,
// not a loop.
func loadOrCreateSecret(path string) ([]byte, error) {
	s, err := loadSecret(path)
	if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	s, err = createSecret(path)
	if !errors.Is(err, os.ErrExist) {
		return s, err
	}
	s, err = loadSecret(path) // another process won the race
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("email: %s exists but cannot be read (a dangling symbolic link?): "+
			"remove it to have chiod create a new link secret, or point it at the secret", path)
	}
	return s, err
}

// loadSecret reads the secret at path; a missing file is an error
// satisfying errors.Is(err, os.ErrNotExist).
func loadSecret(path string) ([]byte, error) {
	// The secret forges approval links: a file others may read is refused.
	b, err := secretfile.Read(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("email: %w", err)
	}
	s, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(s) < 32 {
		return nil, fmt.Errorf("email: %s is not a hex secret of ≥ 32 bytes", path)
	}
	return s, nil
}

// createSecret writes a new random secret to path, which must not exist
// (O_EXCL); when it does, the error satisfies errors.Is(err, os.ErrExist).
func createSecret(path string) ([]byte, error) {
	s := make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("email: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(s) + "\n")
	if err == nil {
		err = f.Sync() // its name is made durable at chiod's start (startfiles.go)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	return s, nil
}
