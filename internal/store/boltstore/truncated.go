package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// A chio.db cut short (a copy that stopped half-way, a full disk during a
// restore) ends before the pages its meta page counts. bbolt maps the file
// and trusts that count: it opens such a file, and a read past the end is
// a SIGBUS that kills chiod with a stack trace. So before bbolt opens the
// file, checkLength reads bbolt's two meta pages (its file format,
// version 2: go.etcd.io/bbolt/internal/common) and refuses a file shorter
// than the newest valid one says.

// Offsets in a meta page: a 16-byte page header, then the meta: magic,
// version, page size, flags (4 bytes each), root bucket (16), freelist
// page, page count (the high-water mark), txid (8 each), then a checksum
// (FNV-64a of the meta before it). bbolt writes them in the host's byte
// order; chiod runs on little-endian hosts.
const (
	metaAt        = 16
	metaMagicAt   = metaAt
	metaVersionAt = metaAt + 4
	metaPageSzAt  = metaAt + 8
	metaPagesAt   = metaAt + 40
	metaTxidAt    = metaAt + 48
	metaSumAt     = metaAt + 56
	boltMagic     = 0xED0CDAED
	boltVersion   = 2
)

// checkLength refuses a bbolt file shorter than its pages. A file that
// does not exist, is empty, or has no valid meta page is left to bbolt
// (which creates the first and refuses the last).
func checkLength(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The first meta page is at 0, the second one page further (bbolt's
	// page size is the OS's when it creates the file).
	m, err := readMeta(f, 0)
	if err != nil {
		return err
	}
	next := int64(os.Getpagesize())
	if m != nil {
		next = int64(m.pageSize)
	}
	m2, err := readMeta(f, next)
	if err != nil {
		return err
	}
	if m == nil || m2 != nil && m2.txid > m.txid {
		m = m2 // bbolt opens at the newest valid meta page
	}
	if m != nil && uint64(st.Size()) < m.pages*m.pageSize {
		return fmt.Errorf("the file is truncated: it is %d bytes, and its last commit wrote %d pages of %d bytes; "+
			"restore it from a backup", st.Size(), m.pages, m.pageSize)
	}
	return nil
}

type boltMeta struct{ pages, pageSize, txid uint64 }

// readMeta reads the meta page at off: nil if there is none or it is not
// valid (torn, or not bbolt's: the other one, or bbolt, decides).
func readMeta(f *os.File, off int64) (*boltMeta, error) {
	buf := make([]byte, metaSumAt+8)
	if _, err := f.ReadAt(buf, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(buf[metaAt:metaSumAt])
	if le.Uint32(buf[metaMagicAt:]) != boltMagic || le.Uint32(buf[metaVersionAt:]) != boltVersion ||
		h.Sum64() != le.Uint64(buf[metaSumAt:]) {
		return nil, nil
	}
	return &boltMeta{pages: le.Uint64(buf[metaPagesAt:]), pageSize: uint64(le.Uint32(buf[metaPageSzAt:])),
		txid: le.Uint64(buf[metaTxidAt:])}, nil
}
