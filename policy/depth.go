package policy

// TooDeep returns the first line of a TOML document nested deeper than
// MaxDepth, or 0: the gate Parse puts before the TOML parser, for the
// other TOML files chio reads (a `chio policy test` cases file). The
// parser recurses once per level of nesting, so a few million "[" in a
// file within its size limit overflow the Go stack, a fatal error no
// caller can recover from.
func TooDeep(src []byte) int {
	_, line := scanPositions(src)
	return line
}
