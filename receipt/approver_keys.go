package receipt

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/chiokernel/chio/internal/keys"
)

// A log holds many approval tokens from few approvers, and parsing a key
// costs about a signature check (keys refuses points with a torsion
// component: a scalar multiplication). approverKey parses each approver's
// key once per process, for up to approverKeysCached approvers; a key that
// does not parse is not remembered (it is refused each time, as before).
const approverKeysCached = 1024

var approverKeys, _ = lru.New[string, keys.PublicKey](approverKeysCached)

// approverKey is keys.ParsePublicKey(s), remembered.
func approverKey(s string) (keys.PublicKey, error) {
	if k, ok := approverKeys.Get(s); ok {
		return k, nil
	}
	k, err := keys.ParsePublicKey(s)
	if err != nil {
		return keys.PublicKey{}, err
	}
	approverKeys.Add(s, k)
	return k, nil
}
