package httpapi

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// POST /approvals/{id}/cancel ends a parked call before a human decided.
// Who may: the admin bearer, or the parked call's own agent with a
// Chio-Proof in the cancel domain over the approval id, the time and the
// reason. A read proof (chio.call-status.v1) cannot stand in for it: a
// header seen on a status read must not be enough to cancel.

// CancelProofSchema is the signature domain of an agent's cancel proof.
const CancelProofSchema = "chio.cancel.v1"

// CancelBody is POST /approvals/{id}/cancel's body.
type CancelBody struct {
	Reason string `json:"reason"`
}

func cancelProofMessage(approvalID, reason string, issuedAt int64) ([]byte, error) {
	payload, err := canon.Marshal(map[string]any{"approval_id": approvalID, "issued_at": issuedAt, "reason": reason})
	if err != nil {
		return nil, err
	}
	return signed.Message(CancelProofSchema, payload), nil
}

// SignCancelProof returns the Chio-Proof by which the agent holding key
// cancels approvalID for reason at time at.
func SignCancelProof(key keys.PrivateKey, approvalID, reason string, at time.Time) string {
	msg, err := cancelProofMessage(approvalID, reason, at.Unix())
	if err != nil {
		return ""
	}
	return strconv.FormatInt(at.Unix(), 10) + "." + hex.EncodeToString(key.SignRaw(msg))
}

// VerifyCancelProof checks a cancel Chio-Proof: the header shape and time
// window of VerifyStatusProof, in the cancel domain, over the reason too.
func VerifyCancelProof(header string, subject keys.PublicKey, approvalID, reason string, now time.Time) error {
	return verifyHeaderProof(header, subject, now, func(at int64) ([]byte, error) { return cancelProofMessage(approvalID, reason, at) })
}

func (s *Server) cancelApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body CancelBody
	if err := decode(w, r, MaxAdminBody, &body); err != nil {
		writeErr(w, err)
		return
	}
	by := kernel.CancelledByAdmin
	if s.bearerRole(r) < roleAdmin {
		if r.Header.Get(StatusProofHeader) == "" {
			if s.bearerRole(r) >= roleReader {
				w.Header().Set("WWW-Authenticate", InsufficientScope) // see refusal
			}
			writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "the admin token or the call's agent's Chio-Proof is required"))
			return
		}
		// An unknown id answers like a bad proof: the header is no oracle.
		subject := ""
		if req, err := s.cfg.Kernel.Approval(id); err == nil {
			subject = req.SubjectPublicKey
		}
		pub, known := proofKey(subject)
		err := VerifyCancelProof(r.Header.Get(StatusProofHeader), pub, id, body.Reason, s.cfg.Kernel.Clock().Now())
		if err != nil || !known {
			writeErr(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, "Chio-Proof does not verify for this id and reason"))
			return
		}
		by = kernel.CancelledByAgent
	}
	out, err := s.cfg.Kernel.Cancel(r.Context(), id, body.Reason, by)
	if err != nil {
		writeErr(w, notFoundAs(err, "approval request", id))
		return
	}
	writeJSON(w, http.StatusOK, out)
}
