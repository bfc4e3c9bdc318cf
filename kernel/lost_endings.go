package kernel

// Endings whose commit answer was lost. A pending request is ended without
// a call running by a cancel, its deadline's denial or a reload
// (endPending), in one commit. That commit can land while its answer never
// arrives (an fsync error after the write, a PostgreSQL COMMIT whose
// connection is cut): endPending then returns the error and tells nothing,
// so channels would keep showing a live request with its buttons and a
// long-poll on the call (chio await) would wait out its whole wait. (A
// cancel is answered ErrOutcomeUnknown; the timer of a deadline retries
// and finds the request no longer pending.)
//
// Such an ending is kept here (approval id → the id of the receipt its
// commit chained). Whichever path first reads it recorded tells what
// endPending would have told after its commit, once: the heal after a
// failed commit, the replica sweep, or a later look at the request that
// finds it no longer pending (a deadline firing again, a second cancel).
// An ending found not recorded never committed and is dropped. Nothing
// here writes to the store, and nothing here can run a call.

import "errors"

// keepLostEnding lists the ending of approvalID whose commit, which may be
// durable, chained receipt receiptID.
func (k *Kernel) keepLostEnding(approvalID, receiptID string) {
	k.lostEndings.Store(approvalID, receiptID)
}

// tellLostEndings tells every listed ending found recorded.
func (k *Kernel) tellLostEndings() {
	k.lostEndings.Range(func(id, receiptID any) bool {
		k.tellLostEnding(id.(string), receiptID.(string))
		return true
	})
}

// tellLostEndingOn tells the listed ending of approvalID, if any, when it
// is found recorded.
func (k *Kernel) tellLostEndingOn(approvalID string) {
	if receiptID, ok := k.lostEndings.Load(approvalID); ok {
		k.tellLostEnding(approvalID, receiptID.(string))
	}
}

// tellLostEnding reads the request and, if it was ended by the commit that
// chained receiptID, publishes what endPending publishes after its commit.
// The entry is taken from the list by exactly one caller, which alone
// publishes. A read that fails leaves the entry for the next look.
func (k *Kernel) tellLostEnding(approvalID, receiptID string) {
	req, err := k.Approval(approvalID)
	if errors.Is(err, ErrNotFound) {
		k.lostEndings.CompareAndDelete(approvalID, receiptID)
		return
	}
	if err != nil {
		return
	}
	// An ending commits the request's resolution naming its receipt, in
	// one transaction with the call and the receipt.
	recorded := req.Resolution != nil && req.Resolution.ReceiptID == receiptID
	var rec *CallRecord
	if recorded {
		if rec, err = k.storedCall(req.RequestID); err != nil {
			return // looked at again: the ending is told with its call
		}
	}
	if !k.lostEndings.CompareAndDelete(approvalID, receiptID) || !recorded {
		return // told by another path, or never committed: nothing to tell
	}
	// As endPending after its commit.
	k.stopTimer(approvalID)
	k.announce(EventApprovalResolved, req)
	k.completed(rec)
}
