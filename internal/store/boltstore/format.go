package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// A chio.db records the format it is written in (meta "format"), as
// pgstore's chio_schema records a database's. A newer chiod may give the
// file a meaning this build would miss: a bucket it must read, a record
// member it must honour (say, one that says a call must not be re-sent).
// Run on such a file, this build would read the records without it and
// rewrite them without it. So a build refuses a format newer than its own,
// before it changes anything, and an operator who rolls chiod back is told
// to run the newer one.

var metaFormat = []byte("format")

// formatVersion is the format this build writes. Raise it with any change
// whose data an older build must not run on; the older build then refuses
// the file. A file without a recorded format was written before it was
// recorded: format 1.
const formatVersion = 1

// ErrFormatTooNew: the store was written by a newer chiod.
var ErrFormatTooNew = errors.New("boltstore: this chio.db was written by a newer chiod")

// checkFormat refuses a file of a format this build does not know, and
// records this build's format in one that has none (new, or older).
func checkFormat(tx *bolt.Tx, path string) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return errors.New("boltstore: no meta bucket") // Open and reopen create it first
	}
	v := meta.Get(metaFormat)
	if v == nil {
		return meta.Put(metaFormat, []byte(strconv.Itoa(formatVersion)))
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 || strconv.Itoa(n) != string(v) {
		return fmt.Errorf("boltstore: %s records format %q, which no chiod writes", path, v)
	}
	if n > formatVersion {
		return fmt.Errorf("%w: %s is format %d, and this chiod knows formats up to %d; "+
			"start the chiod that wrote it (or a newer one): a chio.db is never downgraded",
			ErrFormatTooNew, path, n, formatVersion)
	}
	return checkBuckets(tx, path, n)
}

// checkBuckets refuses a file of a recorded format that lacks one of its
// buckets. They were all created in the transaction that recorded the
// format, so one missing was lost since (an edit, damage), not left by an
// older build; recreated empty, it would forget what it held (consumed:
// every used approval token accepted again; dispatching: calls recovery
// must finish). Only batches_live, which Open rebuilds whole from batches,
// may be missing. A bucket added later comes with a new format version.
func checkBuckets(tx *bolt.Tx, path string, format int) error {
	for _, b := range allBuckets {
		if tx.Bucket(b) == nil && !bytes.Equal(b, bucketLiveBatches) {
			return fmt.Errorf("boltstore: %s has no %q bucket, which every chio.db of format %d has: "+
				"the file was damaged or edited; restore it from a backup", path, b, format)
		}
	}
	return nil
}
