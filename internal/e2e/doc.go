// Package e2e holds end-to-end tests that build the real chiod and chio
// binaries and drive them over loopback: the quick start, the HTTP contract,
// and crash safety (kill -9 under load).
package e2e
