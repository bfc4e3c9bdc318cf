package approval

import "github.com/gofrs/uuid/v5"

// newID returns prefix + UUIDv7.
func newID(prefix string) string { return prefix + uuid.Must(uuid.NewV7()).String() }

// NewRequestID returns a fresh approval request id ("ar-" + UUIDv7).
func NewRequestID() string { return newID("ar-") }

// NewBatchID returns a fresh batch approval id ("ba-" + UUIDv7).
func NewBatchID() string { return newID("ba-") }

// MaxIDLen bounds a signer-chosen id (a standing approval's): the HTTP API
// takes ids of at most this many bytes from URL paths.
const MaxIDLen = 128

// IDRule says in words what ValidID accepts, for error messages.
const IDRule = "1..128 characters of [A-Za-z0-9._:-], not \".\" or \"..\""

// ValidID reports whether id is 1..MaxIDLen characters of [A-Za-z0-9._:-]
// (the set request and capability ids use) and not "." or "..". A
// standing approval's id is chosen by its signer, and the only way to end
// one early is DELETE /approvals/batch/{id}: an id outside this rule would
// not fit in that path (too long, "/" or "?" in it, or "." and "..", which
// the router redirects away) and could not be revoked. It is also printed
// in terminals and pages, so it holds nothing that could act there.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLen || id == "." || id == ".." {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}
