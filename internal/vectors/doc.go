// Package vectors owns the cross-language test vectors in testdata/vectors
// at the repository root: canonical JSON (RFC 8785 plus chio's strictness),
// parameter hashes, call proofs, Chio-Proof status and cancel headers, approval
// tokens, and the verdict on each of a set of public keys (which to accept,
// which to refuse), all produced by the Go implementation that chiod runs. It also
// writes the Python and TypeScript SDKs' case-folding tables
// (sdk/python/chio/_casefold_table.py, sdk/typescript/src/casefold-table.ts)
// from unicode.SimpleFold, by which they refuse member names that differ
// only in letter case as internal/canon does.
//
// The Python (sdk/python) and TypeScript (sdk/typescript) SDKs must
// reproduce every vector byte for byte; Ed25519 is deterministic, so fixed
// seeds give fixed signatures. Regenerate with
//
//	go test ./internal/vectors -update
//
// The package has no code of its own; it imports no transport.
package vectors
