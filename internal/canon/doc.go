// Package canon is chio's JSON boundary: strict decoding of untrusted JSON and
// RFC 8785 (JCS) canonicalization of everything that is signed or hashed.
//
// Strict means: duplicate object names (also names differing only in
// letter case, see fold.go), invalid UTF-8, nesting deeper than MaxDepth and
// integers outside ±2^53 are errors, never silently accepted; and Unmarshal
// matches member names to struct fields exactly.
// Canonicalization is delegated to go-json-experiment's jsontext, which
// implements RFC 8785 number and string serialization.
//
// canon imports nothing of chio's.
package canon
