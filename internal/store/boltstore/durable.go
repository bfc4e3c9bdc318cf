package boltstore

// Reads see only durable commits.
//
// bbolt's Commit writes the data pages, fsyncs, writes the meta page and
// fsyncs again. A read transaction begun in between finds the new meta page
// (the write is already in the page cache) and so reads a commit that a
// power cut can still take back: a GET could show a decision the log then
// loses, and a client keep a signed receipt whose seq the next commit gives
// to another. So the store records the last transaction it knows durable (a
// commit whose Commit has returned), and a read transaction that begins on
// a later one waits for it before reading anything (a read transaction's
// snapshot is fixed when it begins, so waiting first is enough, even for an
// export that streams as it reads). If that commit fails instead, the read
// fails (ErrUnavailable): what it would have shown may not be on disk.
//
// No deadlock: a reader only waits on a commit whose meta page is written,
// so that commit is past every step that needs the mmap lock the reader
// holds, and the committer records it before starting the next one. Writes
// outside the committer (Open, heal, Close) happen while no reader runs.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chiokernel/chio/kernel"
)

type durableMark struct {
	txid    atomic.Uint64 // the last transaction known durable; written under mu
	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) when txid moves or the store fails
}

func newDurableMark(txid uint64) *durableMark {
	d := &durableMark{changed: make(chan struct{})}
	d.txid.Store(txid)
	return d
}

// advance records txid as durable and wakes the readers waiting for it.
func (d *durableMark) advance(txid uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.txid.Store(max(d.txid.Load(), txid))
	close(d.changed)
	d.changed = make(chan struct{})
}

// wake lets waiting readers look again (the store failed).
func (d *durableMark) wake() { d.advance(0) }

// reset records txid as the last durable transaction of a reopened file
// (heal.go; no reader runs meanwhile).
func (d *durableMark) reset(txid uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.txid.Store(txid)
}

// wait returns once txid is durable, or an error once the store has failed
// with txid not known durable.
func (d *durableMark) wait(txid uint64, failed func() *error) error {
	if d.txid.Load() >= txid { // almost every read
		return nil
	}
	for {
		d.mu.Lock()
		done, changed := d.txid.Load() >= txid, d.changed
		d.mu.Unlock()
		if done {
			return nil
		}
		if e := failed(); e != nil {
			return fmt.Errorf("%w: the commit this read would see may not be on disk: %v", kernel.ErrUnavailable, *e)
		}
		<-changed
	}
}
