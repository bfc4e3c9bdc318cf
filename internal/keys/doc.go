// Package keys owns chio's Ed25519 key material: the `ed25519:<hex>` text form
// of public keys, PKCS#8 PEM private key files, and the weak-key rules applied
// wherever a public key is registered or presented.
//
// keys imports nothing of chio's.
package keys
