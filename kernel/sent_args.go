package kernel

import (
	"bytes"
	"encoding/json"

	"github.com/chiokernel/chio/internal/canon"
)

// A tool receives a call's arguments as the canonical bytes parameter_hash
// covers, and every re-send of a call carries the bytes its first delivery
// did: a tool's dedupe (sdk/toolserver) refuses a repeated Idempotency-Key
// whose body differs (422) instead of replaying the answer it recorded.
//
// Builds before 8320525 wrote call records with encoding/json, which
// rewrites < > & inside the arguments as \u003c \u003e \u0026: equal in
// value, other bytes. Such a build sent a call allowed at once, or approved
// with amended arguments, with the canonical bytes it held in memory, and
// any other approved call from its record, escaped. This build stores and
// sends canonical arguments, and restores an old parked record's when it
// resumes the call (resume.go), so a record still holding escapes when it
// is sent was decided by an older build: its re-send follows that build's
// first delivery. (Builds before RequestedParameterHash existed do not say
// which approvals were amended: theirs are re-sent as stored.)

// escapedByOldRecords are the escapes encoding/json wrote and RFC 8785
// never writes (it writes the characters).
var escapedByOldRecords = [][]byte{[]byte(`\u003c`), []byte(`\u003e`), []byte(`\u0026`)}

// canonicalArguments returns stored arguments as their canonical bytes:
// those of a record written before 8320525 restored, any other (every
// record since, whose arguments are canonical) as stored, uncopied.
func canonicalArguments(stored json.RawMessage) json.RawMessage {
	for _, esc := range escapedByOldRecords {
		if bytes.Contains(stored, esc) {
			if c, err := canon.Canonicalize(stored); err == nil {
				return c
			}
			return stored // not JSON a kernel wrote: sent as it was, as before
		}
	}
	return stored
}

// sentArguments returns the bytes a delivery of rec sends: the ones its
// first delivery sent.
func sentArguments(rec *CallRecord) json.RawMessage {
	if rec.ApprovalID != "" && rec.RequestedParameterHash == "" {
		// Approved as parked: sent from its record, by any build.
		return rec.Arguments
	}
	return canonicalArguments(rec.Arguments)
}
