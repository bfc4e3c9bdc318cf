package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxSecretFileBytes bounds what chiod reads from a key or token file: a
// PKCS#8 Ed25519 key is ~120 bytes, a token 65.
const maxSecretFileBytes = 64 << 10

// readSecretFile reads a file that holds a secret chiod signs or
// authenticates with (kernel.pem, admin.token, read.token). Whoever can
// read it can mint capabilities, forge receipts or act as the admin, so
// on Unix a file that group or others may read or write is refused, as
// sshd refuses such a private key: chiod does not start. The mode is
// checked on the opened file, so the bytes read are the file checked.
// A missing file is an error satisfying errors.Is(err, os.ErrNotExist).
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing to start: %s is not a regular file", path)
	}
	if err := checkSecretMode(path, fi.Mode()); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretFileBytes {
		return nil, errors.New("refusing to start: " + path + " is too large to be a key or token file")
	}
	return b, nil
}
