package boltstore

import bolt "go.etcd.io/bbolt"

// Hooks for the external tests that reach into bbolt's buckets (they are
// in package boltstore_test because the conformance suite they share
// imports synth, which imports this package).
var (
	IndexBucketsForTest = indexBuckets
	BucketLeavesForTest = bucketLeaves
	SeqKeyForTest       = seqKey
)

// IndexedThroughForTest reads how far the durable index reaches.
func IndexedThroughForTest(s *Store) (through uint64) {
	s.view(func(btx *bolt.Tx) error { through = indexedThrough(btx); return nil })
	return through
}

// ReopenForTest runs the heal's reopen of the file at s's path.
func ReopenForTest(s *Store) error { return s.reopen() }

// SetQueryChunkForTest makes the read transactions of queries and stats
// this small (index entries visited, candidates in the first chunk, bytes
// copied out) until the returned function restores them.
func SetQueryChunkForTest(entries, first, bytes int) (restore func()) {
	e, f, b := queryChunk, queryFirstChunk, queryChunkBytes
	queryChunk, queryFirstChunk, queryChunkBytes = entries, first, bytes
	return func() { queryChunk, queryFirstChunk, queryChunkBytes = e, f, b }
}

// SetAfterWriteForTest makes the committer run fn right after bbolt's
// Commit returns, before anything else.
func SetAfterWriteForTest(s *Store, fn func()) { s.afterWrite = fn }
