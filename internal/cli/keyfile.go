package cli

import (
	"fmt"
	"os"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/secretfile"
)

// loadKey loads the private key file path (an approver's or an agent's)
// and warns on stderr when other users may read it — the mode chiod
// refuses for its own secret files (secretfile.CheckMode; never outside
// Unix): whoever reads it signs as its holder. A warning, not a refusal:
// the repository's demo keys check out 0644, and keys are copied between
// machines whose modes the CLI does not control.
func (e *Env) loadKey(path string) (keys.PrivateKey, error) {
	k, err := keys.LoadPrivateKey(path)
	if err != nil {
		return k, missingKey(path, err)
	}
	if fi, err := os.Stat(path); err == nil && secretfile.CheckMode(path, fi.Mode()) != nil {
		fmt.Fprintf(e.Stderr, "chio: warning: key file %s has mode %#o: other users may read it and sign as %s; run `chmod 600 %s`\n",
			path, fi.Mode().Perm(), k.Public(), path)
	}
	return k, nil
}
