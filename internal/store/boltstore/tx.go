package boltstore

// tx: the kernel's transaction over bbolt (kernel.Tx).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	jsonv1 "github.com/go-json-experiment/json/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/jsonexact"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// tx implements kernel.Tx over a bbolt transaction.
type tx struct {
	btx      *bolt.Tx
	s        *Store
	last     uint64
	writable bool
	appended []*kernel.Appended
	signed   int        // appended[:signed] are signed
	leaves   [][32]byte // of appended, once signed
	indexAll bool       // a reader asked for the whole log indexed (syncIndex)
	indexes  bool       // this commit brings the index up to t.last
	// New call records this commit put after the calls bucket's last key
	// before the commit (callsEnd), and before it (packCalls).
	newAtEnd, newInside int
	callsEnd            []byte
	callsEndKnown       bool
}

func (t *tx) Call(id string) (*kernel.CallRecord, error) {
	v := t.btx.Bucket(bucketCalls).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	// Every settle reads the record its decision wrote, on the committer's
	// critical path: decoded with go-json-experiment's implementation of
	// encoding/json's semantics, 2.7x faster (codec_test.go holds the two
	// to the same result).
	var c kernel.CallRecord
	if err := jsonv1.Unmarshal(v, &c); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt call %q: %w", id, err)
	}
	return &c, nil
}

func (t *tx) PutCall(c *kernel.CallRecord) error {
	v, err := jsonexact.Marshal(c)
	if err != nil {
		return err
	}
	if c.Status == kernel.StatusDispatching {
		if err := t.btx.Bucket(bucketInFlight).Put([]byte(c.RequestID), []byte{}); err != nil {
			return err
		}
	} else if err := t.btx.Bucket(bucketInFlight).Delete([]byte(c.RequestID)); err != nil {
		return err
	}
	b := t.btx.Bucket(bucketCalls)
	key := []byte(c.RequestID)
	// Count new records for packCalls: after where the bucket ended before
	// this commit (records of one commit arrive in any order), or inside
	// it. A key after the end is new without a lookup (one put twice in a
	// commit counts twice: only page density depends on the count).
	if !t.callsEndKnown {
		last, _ := b.Cursor().Last()
		t.callsEnd, t.callsEndKnown = bytes.Clone(last), true
	}
	switch {
	case bytes.Compare(key, t.callsEnd) > 0:
		t.newAtEnd++
	case b.Get(key) == nil:
		t.newInside++
	}
	return b.Put(key, v)
}

func (t *tx) Revoked(id string) (bool, error) {
	return t.btx.Bucket(bucketRevoked).Get([]byte(id)) != nil, nil
}

func (t *tx) Revoke(id string, at int64) error {
	b := t.btx.Bucket(bucketRevoked)
	if b.Get([]byte(id)) != nil {
		return nil // first revocation time wins
	}
	return b.Put([]byte(id), seqKey(uint64(at)))
}

func (t *tx) Counter(key string) (uint64, error) {
	v := t.btx.Bucket(bucketCounters).Get([]byte(key))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, errors.New("boltstore: corrupt counter")
	}
	return binary.BigEndian.Uint64(v), nil
}

func (t *tx) SetCounter(key string, v uint64) error {
	return t.btx.Bucket(bucketCounters).Put([]byte(key), seqKey(v))
}

func (t *tx) Receipt(id string) ([]byte, error) {
	k := t.btx.Bucket(bucketReceiptIDs).Get([]byte(id))
	if k == nil {
		return nil, kernel.ErrNotFound
	}
	v := t.btx.Bucket(bucketReceipts).Get(k)
	if v == nil {
		return nil, fmt.Errorf("boltstore: receipt %s indexed but missing", id)
	}
	return v, nil
}

func (t *tx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	c := t.btx.Bucket(bucketReceipts).Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k)
		if seq > to || !fn(seq, v) {
			break
		}
	}
	return nil
}

func (t *tx) LastSeq() uint64 { return t.last }

func (t *tx) AppendReceipt(r *receipt.Receipt) *kernel.Appended {
	if !t.writable {
		panic("boltstore: AppendReceipt on read-only tx")
	}
	t.last++
	r.Seq = t.last
	a := &kernel.Appended{Receipt: r}
	t.appended = append(t.appended, a)
	return a
}

func (t *tx) Approval(id string) (*approval.Request, error) {
	v := t.btx.Bucket(bucketApprovals).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	var r approval.Request
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt approval %q: %w", id, err)
	}
	return &r, nil
}

func (t *tx) PutApproval(r *approval.Request) error {
	v, err := jsonexact.Marshal(r)
	if err != nil {
		return err
	}
	if r.Status == approval.StatusPending {
		err = t.btx.Bucket(bucketPending).Put([]byte(r.ApprovalID), []byte{})
	} else {
		err = t.btx.Bucket(bucketPending).Delete([]byte(r.ApprovalID))
	}
	if err != nil {
		return err
	}
	return t.btx.Bucket(bucketApprovals).Put([]byte(r.ApprovalID), v)
}

func (t *tx) PendingApprovals(fn func(*approval.Request) bool) error {
	c := t.btx.Bucket(bucketPending).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		r, err := t.Approval(string(k))
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
	}
	return nil
}

func (t *tx) Consumed(tokenID string) (bool, error) {
	return t.btx.Bucket(bucketConsumed).Get([]byte(tokenID)) != nil, nil
}

func (t *tx) Consume(tokenID, approvalID string) error {
	b := t.btx.Bucket(bucketConsumed)
	if b.Get([]byte(tokenID)) != nil {
		return approval.ErrReplay
	}
	return b.Put([]byte(tokenID), []byte(approvalID))
}

func (t *tx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	c := t.btx.Bucket(bucketInFlight).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		rec, err := t.Call(string(k))
		if err != nil {
			return err
		}
		if !fn(rec) {
			return nil
		}
	}
	return nil
}

// CountersWithPrefix visits the committed counters whose key starts with
// prefix, in key order (kernel.CounterScanner).
func (s *Store) CountersWithPrefix(prefix string, fn func(key string, v uint64) bool) error {
	return s.view(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketCounters).Cursor()
		for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			if len(v) != 8 {
				return errors.New("boltstore: corrupt counter")
			}
			if !fn(string(k), binary.BigEndian.Uint64(v)) {
				return nil
			}
		}
		return nil
	})
}
