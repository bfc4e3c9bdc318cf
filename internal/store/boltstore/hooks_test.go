package boltstore

// Hooks for the external tests that reach into bbolt's buckets (they are
// in package boltstore_test because the conformance suite they share
// imports synth, which imports this package).
var (
	IndexBucketsForTest = indexBuckets
	BucketLeavesForTest = bucketLeaves
	SeqKeyForTest       = seqKey
)
