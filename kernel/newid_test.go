package kernel

import (
	"strings"
	"testing"

	"github.com/gofrs/uuid/v5"
)

// NewID writes the UUID's text itself: it must be the library's canonical
// form of a version 7 UUID, after the prefix, and ids must ascend.
func TestNewIDIsPrefixAndCanonicalUUIDv7(t *testing.T) {
	prev := ""
	for _, prefix := range []string{"", "rc-", "a-much-longer-prefix-than-the-kernel-uses-for-its-ids-"} {
		for range 200 {
			id := NewID(prefix)
			rest, ok := strings.CutPrefix(id, prefix)
			if !ok {
				t.Fatalf("%q does not start with %q", id, prefix)
			}
			u, err := uuid.FromString(rest)
			if err != nil || u.String() != rest || u.Version() != uuid.V7 {
				t.Fatalf("%q: not a canonical UUIDv7 (%v)", rest, err)
			}
			if prefix == "rc-" && id <= prev {
				t.Fatalf("ids do not ascend: %q after %q", id, prev)
			}
			if prefix == "rc-" {
				prev = id
			}
		}
	}
}
