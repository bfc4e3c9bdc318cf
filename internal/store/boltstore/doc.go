// Package boltstore is the embedded default kernel.Store: one bbolt file,
// written by a single group-commit goroutine.
//
// Every Update call enqueues a function; the committer runs everything queued
// since its last commit in ONE bbolt transaction, signs the receipts those
// functions appended (in parallel, after seqs are assigned in order), commits
// with one fsync, and only then releases the callers. The queue is bounded: a
// full queue fails closed with kernel.ErrQueueFull, it never drops work.
//
// The same commit writes each receipt's leaf hash and its secondary indexes
// (index.go), so audit queries (query.go, stats.go) never scan the whole log
// and never see a receipt without its index entries. With Options.Log the
// store also feeds the Merkle log: it is loaded from the leaves at Open and
// appended after each durable commit; signed checkpoints are stored through
// the group commit (log.go). Export (export.go) writes the offline audit
// file from one read transaction.
//
// A failed commit poisons the store (kernel.ErrUnavailable) until restart:
// after an fsync error nothing about the file can be trusted to be durable.
//
// This package must never import net/http or a channel SDK.
package boltstore
