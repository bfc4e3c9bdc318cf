package kernel

// Who is calling, and with what: a call's shape and sizes are checked,
// its arguments and intent canonicalized, its capability verified (or
// recalled from the cache of verified capability bytes) and its proof
// checked against the canonical parameter hash, in that order, before
// any guard or store sees it.

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/policy"
)

// authenticate checks the call's shape, capability and proof.
func (k *Kernel) authenticate(call *ToolCall, now time.Time) (verifiedCap, string, error) {
	if !validRequestID(call.RequestID) {
		return verifiedCap{}, "", fmt.Errorf("%w: request_id must be %s, and not start with \"ar-\"", ErrBadCall, approval.IDRule)
	}
	if err := CheckCallShape(call); err != nil {
		return verifiedCap{}, "", err
	}
	vc, err := k.capability(call.Capability)
	if err != nil {
		return verifiedCap{}, "", err
	}
	paramHash, err := canonicalParameterHash(call.Server, call.Tool, call.Arguments, call.GovernedIntent)
	if err != nil {
		return verifiedCap{}, "", err
	}
	if err := verifyProof(k.verifyKeyFor(vc.subject), call.Proof, call.RequestID, vc.cap.ID, call.Server, call.Tool, paramHash, now); err != nil {
		return verifiedCap{}, "", err
	}
	return vc, paramHash, nil
}

// capability verifies (or recalls having verified) exactly these bytes.
func (k *Kernel) capability(raw json.RawMessage) (verifiedCap, error) {
	h := sha256.Sum256(raw)
	if vc, ok := k.caps.Get(h); ok {
		return vc, nil
	}
	c, subject, err := ParseCapability(raw, k.trusted...)
	if err != nil {
		return verifiedCap{}, err
	}
	vc := verifiedCap{cap: c, subject: subject, subjectText: subject.String()}
	k.caps.Add(h, vc)
	return vc, nil
}

// CheckCallShape applies the rules a call meets before anything judges
// it: server and tool named, names within the policy's naming rule,
// arguments a JSON object within MaxArgumentsBytes (as sent and in
// canonical form), an intent within MaxIntentBytes. It rewrites call's
// arguments and intent to their canonical bytes and an empty operation
// to "invoke". Errors wrap ErrBadCall. `chio policy test` calls it too,
// so that it refuses exactly the calls chiod refuses.
func CheckCallShape(call *ToolCall) error {
	if call.Server == "" || call.Tool == "" {
		return fmt.Errorf("%w: server and tool are required", ErrBadCall)
	}
	if call.Operation == "" {
		call.Operation = "invoke"
	}
	// Names land in receipts, indexes and approvers' screens: they meet the
	// policy's own naming rule (bounded, printable, no spaces) first.
	for _, n := range []struct{ what, v string }{{"server", call.Server}, {"tool", call.Tool}, {"operation", call.Operation}} {
		if err := policy.CheckName(n.v); err != nil {
			return fmt.Errorf("%w: %s %s", ErrBadCall, n.what, err)
		}
	}
	if len(call.Arguments) == 0 || string(call.Arguments) == "null" {
		call.Arguments = json.RawMessage("{}")
	}
	if len(call.Arguments) > MaxArgumentsBytes {
		return fmt.Errorf("%w: arguments larger than %d bytes", ErrBadCall, MaxArgumentsBytes)
	}
	// From here on the call carries its canonical bytes: they are what
	// parameter_hash covers, what approvers are shown, and exactly what the
	// tool receives (no second reading of the agent's spelling).
	args, err := canon.Canonicalize(call.Arguments)
	if err != nil {
		return fmt.Errorf("%w: arguments: %w", ErrBadCall, err)
	}
	if len(args) > MaxArgumentsBytes {
		// The canonical form is what is stored, shown and sent, and it can
		// be longer than what was sent ("9e15" is 9000000000000000).
		return fmt.Errorf("%w: arguments larger than %d bytes in canonical form", ErrBadCall, MaxArgumentsBytes)
	}
	if args[0] != '{' {
		return fmt.Errorf("%w: arguments must be a JSON object", ErrBadCall)
	}
	if err := checkHashedDepth("arguments", args); err != nil {
		return err
	}
	call.Arguments = args
	if len(call.GovernedIntent) > 0 {
		// The size limit meets the intent as sent, before any parser does.
		if len(call.GovernedIntent) > MaxIntentBytes {
			return fmt.Errorf("%w: governed_intent is %d bytes; the limit is %d", ErrBadCall, len(call.GovernedIntent), MaxIntentBytes)
		}
		intent, err := canon.Canonicalize(call.GovernedIntent)
		if err != nil {
			return fmt.Errorf("%w: governed_intent: %w", ErrBadCall, err)
		}
		if err := checkHashedDepth("governed_intent", intent); err != nil {
			return err
		}
		call.GovernedIntent = intent
	}
	return nil
}
