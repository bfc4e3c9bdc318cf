package httpapi

// Inclusion and consistency proofs and the signed checkpoints they hang on.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/receipt"
)

// ProofResponse is GET /v1/receipts/{id}/proof's answer: the receipt and
// the checkpoint as stored, and the receipt's inclusion proof under it.
type ProofResponse struct {
	Receipt    json.RawMessage        `json:"receipt"`
	Checkpoint json.RawMessage        `json:"checkpoint"`
	Proof      receipt.InclusionProof `json:"proof"`
}

func (s *Server) receiptProof(w http.ResponseWriter, r *http.Request) {
	if !noQuery(w, r) {
		return
	}
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	raw, err := s.storedReceipt(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rc, err := receipt.Decode(raw)
	if err != nil {
		writeErr(w, err)
		return
	}
	// A receipt newer than the latest checkpoint gets a fresh one.
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	cpRaw, cp, err := log.Cover(ctx, rc.Seq)
	if err != nil {
		writeErr(w, err)
		return
	}
	proof, err := log.Prove(rc.Seq, raw, cp)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ProofResponse{Receipt: raw, Checkpoint: cpRaw, Proof: proof})
}

// latestCheckpoint answers GET /v1/checkpoints/latest with a checkpoint
// covering every receipt committed before the request: one is signed first
// if the log grew since the latest (as for an export or a proof). An
// auditor pins it before taking an export, which must then reach it; a
// checkpoint up to an hour old would leave the newest receipts unanchored.
func (s *Server) latestCheckpoint(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	// It takes no parameter: ?size=N belongs to /v1/checkpoints, and
	// answering it here with the newest checkpoint would mislead.
	if _, err := strictQuery(r, nil); err != nil {
		writeErr(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	raw, _, err := log.Checkpoint(ctx)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRaw(w, raw)
}

// checkpointAt answers GET /v1/checkpoints?size=N: the checkpoint signed at
// exactly that tree size, if one was.
func (s *Server) checkpointAt(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	q, err := strictQuery(r, []string{"size"})
	if err != nil {
		writeErr(w, err)
		return
	}
	size, err := strconv.ParseUint(q.Get("size"), 10, 64)
	if err != nil {
		writeErr(w, badRequest("size=N is required (see /v1/checkpoints/latest for the newest)"))
		return
	}
	raw, err := log.CheckpointAt(size)
	if err == nil && raw == nil {
		err = apiErr(http.StatusNotFound, CodeNotFound, "no checkpoint was signed at tree_size "+strconv.FormatUint(size, 10))
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRaw(w, raw)
}

// consistencyProof answers GET /v1/checkpoints/consistency?from=N&to=M.
func (s *Server) consistencyProof(w http.ResponseWriter, r *http.Request) {
	log, err := s.receiptLog()
	if err != nil {
		writeErr(w, err)
		return
	}
	q, err := strictQuery(r, []string{"from", "to"})
	if err != nil {
		writeErr(w, err)
		return
	}
	from, err1 := strconv.ParseUint(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseUint(q.Get("to"), 10, 64)
	if err1 != nil || err2 != nil || from > to {
		writeErr(w, badRequest("from=N&to=M with N ≤ M are required"))
		return
	}
	p, err := log.Consistency(from, to)
	if errors.Is(err, receipt.ErrNotInLog) {
		err = apiErr(http.StatusNotFound, CodeNotFound, err.Error())
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
