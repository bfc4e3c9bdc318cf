package kernel

import (
	"context"

	"github.com/chiokernel/chio/internal/keys"
)

// Call returns the record of a call: the durable one, or the settled one
// its caller was answered with while its settle commit runs (settling.go).
func (k *Kernel) Call(requestID string) (*CallRecord, error) {
	ans := k.answered(requestID) // before the store read (settling.go)
	rec, err := k.storedCall(requestID)
	return settledView(rec, ans), err
}

// storedCall returns the durable record of a call.
func (k *Kernel) storedCall(requestID string) (*CallRecord, error) {
	var rec *CallRecord
	err := k.store.View(func(tx ReadTx) error {
		var err error
		rec, err = tx.Call(requestID)
		return err
	})
	return rec, err
}

// RecordNotifyFailure appends a channel delivery failure to the request so
// approvers and operators can see it; it never changes the request's status.
func (k *Kernel) RecordNotifyFailure(ctx context.Context, approvalID, channel, msg string) error {
	const maxKept = 20
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return k.update(ctx, func(tx Tx) error {
		req, err := tx.Approval(approvalID)
		if err != nil {
			return err
		}
		req.NotifyErrors = append(req.NotifyErrors, channel+": "+msg)
		if len(req.NotifyErrors) > maxKept {
			req.NotifyErrors = req.NotifyErrors[len(req.NotifyErrors)-maxKept:]
		}
		return tx.PutApproval(req)
	})
}

// SignAsKernel signs body bytes for outbound deliveries (the webhook's
// X-Chio-Signature) under domain, with the kernel key.
func (k *Kernel) SignAsKernel(domain string, body []byte) []byte {
	msg := make([]byte, 0, len(domain)+1+len(body))
	msg = append(append(append(msg, domain...), 0), body...)
	return k.key.SignRaw(msg)
}

// Store returns the kernel's store (read paths of the HTTP API use it).
func (k *Kernel) Store() Store { return k.store }

// ApproverKeys lists every approver key of the policy in force.
func (k *Kernel) ApproverKeys() []keys.PublicKey {
	var out []keys.PublicKey
	seen := map[string]bool{}
	p := k.Policy()
	for i := range p.Grants {
		if a := p.Grants[i].Approval; a != nil {
			for _, ap := range a.Approvers {
				if !seen[ap.PublicKey.String()] {
					seen[ap.PublicKey.String()] = true
					out = append(out, ap.PublicKey)
				}
			}
		}
	}
	return out
}
