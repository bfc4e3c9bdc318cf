package boltstore

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/keys"
)

// A chio.db belongs to one kernel key. Opened under another, it would carry
// on as a second kernel with the first one's state: the same pending
// approval request ids (a per-call approval token names the request, not
// the kernel, so one approval would answer both) and a log signed by two
// keys, which no auditor can verify as one (chio receipt verify
// --kernel-key). So the file records its key when it is created, in the
// same transaction, and Open refuses any other (as pgstore's checkKey does
// for a database).

var (
	bucketMeta    = []byte("meta")       // facts about the file itself
	metaKernelKey = []byte("kernel_key") // the public key its log is signed with
)

// ErrKeyMismatch: the store was created by (its log is signed with) another
// kernel key.
var ErrKeyMismatch = errors.New("boltstore: this chio.db belongs to another kernel key")

// checkKernelKey records pub in a new file and refuses a file that belongs
// to another key. A file made before the key was recorded belongs to the
// key its last receipt names; with no receipt, to pub. It reads one value
// (and, only for such an old file, one receipt).
func checkKernelKey(tx *bolt.Tx, path string, pub keys.PublicKey) error {
	meta := tx.Bucket(bucketMeta)
	want := pub.String()
	stored := string(meta.Get(metaKernelKey))
	if stored == "" {
		var err error
		if stored, err = lastReceiptKey(tx); err != nil {
			return err
		}
		if stored == "" || stored == want {
			if err := meta.Put(metaKernelKey, []byte(want)); err != nil {
				return fmt.Errorf("record the kernel key: %w", err)
			}
			return nil
		}
	}
	if stored != want {
		return fmt.Errorf("%w: %s is the store of kernel key %s, and this kernel.pem is %s; "+
			"to run this store, start with the kernel.pem that wrote it (this then IS that kernel: never run both at once), "+
			"or start a new deployment on an empty data dir",
			ErrKeyMismatch, path, stored, want)
	}
	return nil
}

// lastReceiptKey is the kernel key the newest stored receipt names, "" if
// there is none.
func lastReceiptKey(tx *bolt.Tx) (string, error) {
	k, raw := tx.Bucket(bucketReceipts).Cursor().Last()
	if k == nil {
		return "", nil
	}
	var r struct {
		KernelKey string `json:"kernel_key"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("cannot tell which kernel key signed this store: its last receipt: %w", err)
	}
	if r.KernelKey == "" {
		return "", errors.New("cannot tell which kernel key signed this store: its last receipt names none")
	}
	return r.KernelKey, nil
}
