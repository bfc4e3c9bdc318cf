package email

// The link secret: email-link.key in the data dir.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chiokernel/chio/internal/atomicfile"
	"github.com/chiokernel/chio/internal/secretfile"
)

// loadOrCreateSecret reads the link secret at path, creating it when it
// is missing. If another process creates it between the read and the
// create, it is read once more, and only once: a path that reads as
// missing yet cannot be created (a dangling symbolic link) is an error,
// not a loop.
//
// An empty file is what a crash left between creating the file and
// writing it (chiods before createSecret wrote the secret whole before
// naming it): it holds no secret, so no link was ever minted from it. It
// is removed and created as if missing. (A data dir serves one chiod at a
// time: nothing else is replacing it meanwhile.)
func loadOrCreateSecret(path string) ([]byte, error) {
	s, err := loadSecret(path)
	if errors.Is(err, errEmptySecret) {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, fmt.Errorf("email: %w", rerr)
		}
		err = os.ErrNotExist
	}
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
	if strings.TrimSpace(string(b)) == "" {
		return nil, errEmptySecret
	}
	s, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(s) < 32 {
		return nil, fmt.Errorf("email: %s is not a hex secret of ≥ 32 bytes", path)
	}
	return s, nil
}

// errEmptySecret: the secret file exists and holds nothing.
var errEmptySecret = errors.New("empty link secret")

// createSecret writes a new random secret to path, which must not exist;
// when it does, the error satisfies errors.Is(err, os.ErrExist). The
// secret is written and synced under a temporary name and then linked to
// path (which, like O_EXCL, never replaces a file), so that after a crash
// path holds the whole secret or is missing, never empty.
func createSecret(path string) ([]byte, error) {
	s := make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		return nil, err
	}
	if err := atomicfile.Create(path, []byte(hex.EncodeToString(s)+"\n")); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("email: %w", err)
	}
	// Its name is made durable at chiod's start too (startfiles.go).
	return s, nil
}
