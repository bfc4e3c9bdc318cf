package cli

import (
	"fmt"

	"github.com/chiokernel/chio/internal/keys"
)

// loadKey loads the private key file path (an approver's or an agent's)
// and warns on stderr when other users may read it (keymode_unix.go):
// whoever reads it signs as its holder. A warning, not a refusal: the
// repository's demo keys check out 0644, and keys are copied between
// machines whose modes the CLI does not control. (chiod refuses its own
// secret files in such modes.)
func (e *Env) loadKey(path string) (keys.PrivateKey, error) {
	k, err := keys.LoadPrivateKey(path)
	if err != nil {
		return k, err
	}
	if mode, open := keyFileOpenToOthers(path); open {
		fmt.Fprintf(e.Stderr, "chio: warning: key file %s has mode %#o: other users may read it and sign as %s; run `chmod 600 %s`\n",
			path, mode, k.Public(), path)
	}
	return k, nil
}
