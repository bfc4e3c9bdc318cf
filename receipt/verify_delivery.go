package receipt

import (
	"crypto/sha256"
	"encoding/binary"
)

// Delivery outcomes. An allow receipt is signed before its call is sent
// (write-ahead), so it cannot say how the call went. A call that succeeded
// gets nothing more; one whose tool failed, was never reached, or may or
// may not have acted gets ONE more receipt (kernel.settlementOf):
// incomplete, no approval_request_id, previous_receipt_id = the allow
// receipt, written from the same call record. An auditor reads "did the
// allowed effect happen?" from it, so the verifier requires that it names
// an earlier allow receipt of the same call, and that no allow has two.

// callKey identifies the call a receipt is about: a digest of every field
// the kernel copies from the call record into both the allow receipt and
// its delivery outcome (request_id, capability_id, subject, tool_server,
// tool_name, action, parameter_hash and the delivery semantics fixed at
// the decision). Not policy_hash: the policy may be reloaded in between.
// A digest, not the fields: the verifier keeps one for every allow receipt
// of a log of millions (16 bytes of SHA-256, collision-resistant enough
// for a check of what the kernel key signed).
type callKey [16]byte

func callKeyOf(rc *Receipt) callKey {
	buf := make([]byte, 0, 512)
	for _, s := range []string{rc.RequestID, rc.CapabilityID, rc.Subject, rc.ToolServer, rc.ToolName,
		rc.Action, rc.ParameterHash, metaStr(rc, "delivery")} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(s))) // length-prefixed: fields cannot run together
		buf = append(buf, s...)
	}
	sum := sha256.Sum256(buf)
	return callKey(sum[:16])
}

// logged is what the verifier keeps of every receipt, by id: all a later
// receipt's link may need. Keep it small (a million receipts in a large
// export).
type logged struct {
	line  int
	allow bool    // a verified allow receipt
	call  callKey // allow receipts only
}

// deliveryOutcome checks the delivery outcome rc's link to the allow
// receipt prev; call is rc's callKey.
func (v *verifier) deliveryOutcome(line int, rc *Receipt, prev string, call callKey) {
	target, ok := v.ids[prev]
	switch {
	case !ok || prev == rc.ID:
		v.problem(line, rc, "broken delivery link: previous_receipt_id %s is not an earlier receipt in the log", prev)
	case !target.allow:
		v.problem(line, rc, "broken delivery link: previous_receipt_id %s (line %d) is not a verified allow receipt: only an allowed call is delivered", prev, target.line)
	case target.call != call:
		v.problem(line, rc, "broken delivery link: not for the call allow receipt %s decided (line %d): request_id, capability_id, subject, tool_server, tool_name, action, parameter_hash or metadata delivery differs",
			prev, target.line)
	default:
		if first, dup := v.delivered[prev]; dup {
			v.problem(line, rc, "allow receipt %s already has a delivery outcome receipt %s: a call is settled once", prev, first)
			return
		}
		v.delivered[prev] = rc.ID
		v.rep.Deliveries++
	}
}
