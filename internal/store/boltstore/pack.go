package boltstore

// Packing the calls bucket's pages.
//
// bbolt splits a page that a commit overfills at its bucket's FillPercent,
// 50% by default, which suits keys inserted in random order. Request ids
// mostly ascend: every SDK and `chio call` default to "req-" + a UUIDv7.
// New records then go to the end of the bucket, every page left behind
// stays half empty, and an allowed call's record is written twice (the
// decision, then the settle, which makes it a little larger and splits
// its page again): the calls bucket ended 38% full, and the allow path
// wrote 1.7 pages per decision. Packed to appendFill it writes 1.1.
//
// Ids an agent picks at random would pay for packing instead: a packed
// page splits again at the next record inserted into it. So the store
// packs only while most recent new records were appended at the end of
// the bucket. Only how full pages are depends on this choice, never what
// is stored or read.

// packWindow is about how many new records the choice looks back on.
const packWindow = 4096

// packCalls counts this commit's new call records into the store's recent
// history and sets the calls bucket's fill for this commit (bbolt applies
// it when the commit writes the bucket's pages). Only the committer calls
// it.
func (s *Store) packCalls(t *tx) {
	s.newAtEnd += t.newAtEnd
	s.newInside += t.newInside
	if s.newAtEnd+s.newInside > packWindow {
		s.newAtEnd, s.newInside = s.newAtEnd/2, s.newInside/2
	}
	if s.newAtEnd > s.newInside {
		t.btx.Bucket(bucketCalls).FillPercent = appendFill
	}
}
