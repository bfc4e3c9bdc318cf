// Package receipt owns chio's signed receipts: the Receipt shape of SPEC §3,
// signing and verification, the RFC 6962 Merkle log over receipts in seq
// order, signed checkpoints and inclusion/consistency proofs.
//
// receipt must never import kernel, channels, net/http or a store driver.
package receipt
