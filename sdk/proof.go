package chio

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// The Chio-Proof header lets an agent read its own call and approval with
// no bearer token (SPEC §6). The format is chiod's (internal/httpapi's
// callproof.go); it is restated here so the SDK does not link the server.
// proof_test.go checks this against the server's verifier.
const (
	statusProofHeader = "Chio-Proof"
	statusProofSchema = "chio.call-status.v1"
	cancelProofSchema = "chio.cancel.v1"
)

// signStatusProof returns `<issued_at>.<hex signature>` over
// "chio.call-status.v1" || 0x00 || JCS({"issued_at","request_id"}).
func signStatusProof(key keys.PrivateKey, id string, at time.Time) string {
	payload, err := canon.Marshal(map[string]any{"request_id": id, "issued_at": at.Unix()})
	if err != nil {
		return "" // cannot happen for a string and an int; "" never verifies
	}
	sig := key.SignRaw(signed.Message(statusProofSchema, payload))
	return strconv.FormatInt(at.Unix(), 10) + "." + hex.EncodeToString(sig)
}

// signCancelProof returns the Chio-Proof by which an agent cancels its own
// parked call: over "chio.cancel.v1" || 0x00 ||
// JCS({"approval_id","issued_at","reason"}). A read proof cannot cancel.
func signCancelProof(key keys.PrivateKey, approvalID, reason string, at time.Time) string {
	payload, err := canon.Marshal(map[string]any{"approval_id": approvalID, "issued_at": at.Unix(), "reason": reason})
	if err != nil {
		return ""
	}
	sig := key.SignRaw(signed.Message(cancelProofSchema, payload))
	return strconv.FormatInt(at.Unix(), 10) + "." + hex.EncodeToString(sig)
}
