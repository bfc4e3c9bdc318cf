// Package boltstore is the embedded default kernel.Store: one bbolt file,
// written by a single group-commit goroutine.
//
// Every Update call enqueues a function; the committer runs everything queued
// since its last commit in ONE bbolt transaction, signs the receipts those
// functions appended (in parallel, after seqs are assigned in order), commits
// with one fsync, and only then releases the callers. The queue is bounded: a
// full queue fails closed with kernel.ErrQueueFull, it never drops work.
//
// A failed commit poisons the store (kernel.ErrUnavailable) until restart:
// after an fsync error nothing about the file can be trusted to be durable.
package boltstore
