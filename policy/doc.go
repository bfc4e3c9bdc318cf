// Package policy owns chio.toml: it reads the file, checks every rule before
// anything is built, applies defaults, computes the policy hash that receipts
// carry, and indexes grants so that the kernel's per-call lookups cost the
// same with a thousand grants as with ten.
//
// A *Policy exists only if Load or Parse accepted the whole file. Errors come
// back together, each with the file and line it is about (see Errors), so
// `chio policy check` can show everything that is wrong in one run.
//
// A Policy is immutable after Parse and safe for concurrent use; to change
// policy, parse a new file and swap the pointer.
//
// policy is data, not behaviour: it must never import kernel, approval,
// channels, receipt, net/http or a store driver (bbolt). It depends only on
// internal/keys and internal/canon.
package policy
