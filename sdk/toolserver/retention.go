package toolserver

import (
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Completed keys are indexed by when they completed (bucketDone: 8 bytes
// of big-endian unix seconds, then the key), so that forgetting those past
// Options.RetainFor reads only the records it deletes.
var bucketDone = []byte("idempotency_done_at")

const (
	// pruneEvery: how often (by Options.Now) a delivery looks for records
	// past the horizon.
	pruneEvery = time.Minute
	// pruneBatch bounds the records one transaction forgets, so a backlog
	// (a horizon newly set on a large file) does not hold the file long.
	pruneBatch = 1000
)

func doneIndexKey(at int64, key string) []byte {
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(at))
	return append(k, key...)
}

// indexDone adds every completed record to bucketDone: once, for a file
// written before the index existed.
func indexDone(tx *bolt.Tx) error {
	idx := tx.Bucket(bucketDone)
	return tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
		var rec record
		if json.Unmarshal(v, &rec) != nil || rec.State != "done" {
			return nil // in progress, or unreadable: never forgotten
		}
		return idx.Put(doneIndexKey(rec.At, string(k)), nil)
	})
}

// maybePrune forgets completed records past the horizon, at most once per
// pruneEvery; a failure is left for the next time (the records only wait
// longer).
func (d *Dedupe) maybePrune() {
	if d.opts.RetainFor <= 0 {
		return
	}
	now := d.now()
	d.mu.Lock()
	due := d.lastPrune.IsZero() || now.Sub(d.lastPrune) >= pruneEvery
	if due {
		d.lastPrune = now
	}
	d.mu.Unlock()
	if due {
		_ = d.prune(now.Add(-d.opts.RetainFor).Unix())
	}
}

// prune forgets the completed records of keys that completed before
// cutoff (unix seconds). Records in progress are never indexed, so never
// forgotten: their outcome is unknown and a repeat must not run.
func (d *Dedupe) prune(cutoff int64) error {
	for more := true; more; {
		err := d.db.Update(func(tx *bolt.Tx) error {
			keys, idx := tx.Bucket(bucketKeys), tx.Bucket(bucketDone)
			var old [][]byte // collected first: a bbolt cursor may skip after a Delete
			c := idx.Cursor()
			for k, _ := c.First(); k != nil && len(old) < pruneBatch; k, _ = c.Next() {
				if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) >= cutoff {
					break
				}
				old = append(old, append([]byte(nil), k...))
			}
			more = len(old) == pruneBatch
			for _, k := range old {
				at, key := int64(binary.BigEndian.Uint64(k)), k[8:]
				var rec record
				if v := keys.Get(key); v != nil && json.Unmarshal(v, &rec) == nil && rec.State == "done" && rec.At == at {
					if err := keys.Delete(key); err != nil {
						return err
					}
				}
				if err := idx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
