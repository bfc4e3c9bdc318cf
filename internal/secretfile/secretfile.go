// Package secretfile reads the files that hold chiod's secrets, refusing
// one that other users may read (as sshd refuses such a private key).
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxSecretFileBytes bounds what chiod reads from a key or token file: a
// PKCS#8 Ed25519 key is ~120 bytes, a token 65.
const maxSecretFileBytes = 64 << 10

// Read reads a file that holds a secret chiod signs or authenticates with
// (kernel.pem, admin.token, read.token, email-link.key, custodial Slack
// keys, the TLS key). Whoever can read one can mint capabilities, forge
// receipts or approvals, pose as chiod, or act as the admin, so on Unix a file that group or others
// may read or write is refused. The mode is checked on the opened file, so
// the bytes read are the file checked; the open does not block (openFlags),
// so anything but a regular file, a FIFO included, is refused at once.
// A missing file is an error satisfying errors.Is(err, os.ErrNotExist).
func Read(path string) ([]byte, error) {
	b, err := readRegular(path, maxSecretFileBytes, CheckMode)
	if errors.Is(err, errTooLarge) {
		return nil, errors.New("" + path + " is too large to be a key or token file")
	}
	return b, err
}

var errTooLarge = errors.New("file too large")

// readRegular opens path without blocking (openFlags), refuses anything
// but a regular file, runs check on its mode (nil: none), and reads at
// most max bytes (errTooLarge past them).
func readRegular(path string, max int, check func(string, os.FileMode) error) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if check != nil {
		if err := check(path, fi.Mode()); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// maxPublicFileBytes bounds ReadRegular: a certificate chain is a few KiB.
const maxPublicFileBytes = 1 << 20

// ReadRegular reads a file chiod needs at start-up that holds no secret (a
// TLS certificate chain): any mode, but a regular file only, opened
// without blocking as Read opens (a FIFO would otherwise hang the start),
// and at most 1 MiB.
func ReadRegular(path string) ([]byte, error) {
	b, err := readRegular(path, maxPublicFileBytes, nil)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxPublicFileBytes)
	}
	return b, err
}
