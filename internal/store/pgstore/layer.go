package pgstore

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A layer holds buffered writes: one per function while it runs, and one
// for the batch, into which the functions that are kept merge theirs.

// layer is one function's (or the batch's) buffered writes.
type layer struct {
	calls     map[string]callRow
	approvals map[string]approvalRow
	counters  map[string]uint64
	revoked   map[string]int64
	consumed  map[string]string
	batches   map[string][]byte
	receipts  []*kernel.Appended
	// unrevoked: capabilities a function read as not revoked. Not a write:
	// flush reads them again under the log head's lock, so that a
	// revocation committed by another replica after the read stops the
	// decision (errRevokedSinceRead).
	unrevoked map[string]bool
}

type callRow struct {
	status string
	raw    []byte
}

type approvalRow struct {
	status  string
	expires int64
	raw     []byte
}

// newLayer returns an empty layer; its maps are made on first write (most
// functions write one or two kinds).
func newLayer() *layer { return &layer{} }

// put sets m[k] = v, making m first if needed.
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}

// writes lists the conflict keys a layer writes.
func (l *layer) writes(fn func(key string)) {
	for k := range l.calls {
		fn(kCall + k)
	}
	for k := range l.approvals {
		fn(kApproval + k)
	}
	for k := range l.counters {
		fn(kCounter + k)
	}
	for k := range l.revoked {
		fn(kRevoked + k)
	}
	for k := range l.consumed {
		fn(kConsumed + k)
	}
	for k := range l.batches {
		fn(kBatch + k)
	}
}

// merge adds a kept function's writes to the batch's.
func (l *layer) merge(o *layer) {
	for k, v := range o.calls {
		put(&l.calls, k, v)
	}
	for k, v := range o.approvals {
		put(&l.approvals, k, v)
	}
	for k, v := range o.counters {
		put(&l.counters, k, v)
	}
	for k, v := range o.revoked {
		if _, ok := l.revoked[k]; !ok {
			put(&l.revoked, k, v)
		}
	}
	for k, v := range o.consumed {
		put(&l.consumed, k, v)
	}
	for k, v := range o.batches {
		put(&l.batches, k, v)
	}
	l.receipts = append(l.receipts, o.receipts...)
	for k := range o.unrevoked {
		put(&l.unrevoked, k, true)
	}
}

func (l *layer) empty() bool {
	return len(l.calls)+len(l.approvals)+len(l.counters)+len(l.revoked)+len(l.consumed)+len(l.batches)+len(l.receipts) == 0
}

func decodeCall(id string, raw []byte) (*kernel.CallRecord, error) {
	var c kernel.CallRecord
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt call %q: %w", id, err)
	}
	return &c, nil
}

func decodeApproval(id string, raw []byte) (*approval.Request, error) {
	var r approval.Request
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt approval %q: %w", id, err)
	}
	return &r, nil
}

func decodeBatch(id string, raw []byte) (*approval.Batch, error) {
	var b approval.Batch
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt batch %q: %w", id, err)
	}
	return &b, nil
}
