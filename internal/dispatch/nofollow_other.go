//go:build !unix

package dispatch

// noFollow: no O_NOFOLLOW here. openBuiltin's refuseLink (Lstat) still
// refuses a link planted before the start.
const noFollow = 0
