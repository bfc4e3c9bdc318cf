package httpapi

const (
	// MaxCallBody bounds POST /v1/calls (arguments are bounded again inside).
	MaxCallBody = 1 << 20
	// MaxAdminBody bounds admin request bodies.
	MaxAdminBody = 64 << 10
	// MaxListLimit bounds one page of receipts.
	MaxListLimit = 1000
	// DefaultListLimit is a page's size when none is asked for.
	DefaultListLimit = 100
)
