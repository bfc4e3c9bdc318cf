package approval

import "github.com/gofrs/uuid/v5"

// newID returns prefix + UUIDv7.
func newID(prefix string) string { return prefix + uuid.Must(uuid.NewV7()).String() }

// NewRequestID returns a fresh approval request id ("ar-" + UUIDv7).
func NewRequestID() string { return newID("ar-") }

// NewBatchID returns a fresh batch approval id ("ba-" + UUIDv7).
func NewBatchID() string { return newID("ba-") }
