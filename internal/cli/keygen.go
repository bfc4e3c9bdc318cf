package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chiokernel/chio/internal/keys"
)

func init() {
	register("keygen", "new Ed25519 key (PKCS#8 PEM, 0600); prints ed25519:…", runKeygen)
}

func runKeygen(e *Env, args []string) int {
	fs := newFlags(e, "keygen")
	out := fs.String("out", "", "write the new private key to this file (refuses to overwrite; creates a missing directory, mode 0700)")
	show := fs.String("show", "", "print the public key of an existing key file instead")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("keygen", pos, 0); err != nil {
		return fail(e, err)
	}
	if *show != "" {
		k, err := e.loadKey(*show)
		if err != nil {
			return fail(e, err)
		}
		fmt.Fprintln(e.Stdout, k.Public())
		return ExitOK
	}
	if *out == "" {
		return fail(e, usageErr("keygen", "needs --out FILE (or --show FILE)"))
	}
	k, err := keys.Generate(rand.Reader)
	if err != nil {
		return fail(e, err)
	}
	// The docs keep keys in ~/.chio, which a fresh machine lacks: create
	// the missing directories, private to their owner, as ssh-keygen does.
	if err := os.MkdirAll(filepath.Dir(*out), 0o700); err != nil {
		return fail(e, err)
	}
	if err := keys.WritePrivateKey(*out, k); errors.Is(err, os.ErrExist) {
		return fail(e, fmt.Errorf("chio keygen: %s already exists; keygen never overwrites a key (its public key: chio keygen --show %s)", *out, *out))
	} else if err != nil {
		return fail(e, err)
	}
	fmt.Fprintln(e.Stdout, k.Public())
	return ExitOK
}
