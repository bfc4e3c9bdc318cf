package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/chiokernel/chio/internal/atomicfile"
)

// KeyFile is the kernel key's name in the data dir.
const KeyFile = "kernel.pem"

// startFiles undoes what a refused start created in the data dir. A start
// writes before it can still be refused (the kernel key, the bearer
// tokens, chio.db, the builtin tools' state, channel secrets); left behind,
// they would be secrets nobody asked for and a half-made deployment that
// the next start picks up and trusts (a fresh data dir pointed at the
// wrong database would keep the key the database refused). So the data
// dir's entries are noted once chiod holds its lock, and until the start
// is committed to (chiod serves) any entry that was not there is removed.
// Entries that were there are not touched by the undo, and a start refused
// by the store's key check has written nothing into them (boltstore checks
// the key in a transaction it rolls back).
//
// The one thing not undone is a kernel.pem whose key a database may have
// recorded (keep, decided by mayHoldKey): removing it would leave that
// database bound to a key nobody has.
type startFiles struct {
	dir        string
	createdDir bool // the data dir itself was made by this start
	// existing is the data dir's nearest ancestor that existed before this
	// start (MkdirAll may make several): the new directories' entries are
	// made durable up to it (syncEntries).
	existing  string
	before    map[string]bool // its entries once chiod held the lock
	kept      map[string]bool
	committed bool
}

// noteDataDir makes dir if need be, and refuses one that other users may
// write to, or rename away (checkDataDirMode, checkDataDirParents), before
// anything is written in it. Call
// noteEntries once the data dir is locked: from then on only this chiod
// writes there.
func noteDataDir(dir string) (*startFiles, error) {
	// Before MkdirAll: a refused start leaves no directory behind.
	if err := checkDataDirParents(dir); err != nil {
		return nil, err
	}
	_, err := os.Stat(dir)
	created := errors.Is(err, os.ErrNotExist)
	existing := filepath.Clean(dir)
	for created && existing != filepath.Dir(existing) {
		existing = filepath.Dir(existing)
		if _, err := os.Stat(existing); err == nil {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := checkDataDirMode(dir); err != nil {
		return nil, err
	}
	return &startFiles{dir: dir, createdDir: created, existing: existing, kept: map[string]bool{}}, nil
}

// noteEntries records the data dir's entries as they are.
func (s *startFiles) noteEntries() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	s.before = make(map[string]bool, len(ents))
	for _, e := range ents {
		s.before[e.Name()] = true
	}
	return nil
}

// syncEntries makes the data dir's entries durable and, when this start
// created it, each new directory's entry in its parent, up to the
// ancestor that existed before.
func (s *startFiles) syncEntries() error {
	if err := atomicfile.SyncDir(s.dir); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if !s.createdDir {
		return nil
	}
	for d := filepath.Clean(s.dir); d != s.existing && d != filepath.Dir(d); {
		d = filepath.Dir(d)
		if err := atomicfile.SyncDir(d); err != nil {
			return fmt.Errorf("data dir's parent %s: %w", d, err)
		}
	}
	return nil
}

// keep exempts name from undoEntries.
func (s *startFiles) keep(name string) { s.kept[name] = true }

// commit: the start is no longer refused; nothing is undone.
func (s *startFiles) commit() { s.committed = true }

// undoEntries, when the start was refused (refused != nil, before commit),
// removes the entries it created, the kernel key last (and only if
// everything else went: a chio.db without its kernel.pem is refused at the
// next start, a kernel.pem alone is not). It returns refused, joined with
// any removal that failed.
func (s *startFiles) undoEntries(refused error, log *slog.Logger) error {
	if refused == nil || s.committed || s.before == nil {
		return refused
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return errors.Join(refused, fmt.Errorf("data dir: %w", err))
	}
	var removed []string
	var failed error
	key := false
	for _, e := range ents {
		name := e.Name()
		switch {
		case s.before[name] || s.kept[name] || name == PIDFile: // the lock removes its own file
		case name == KeyFile:
			key = true
		default:
			if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
				failed = errors.Join(failed, err)
				continue
			}
			removed = append(removed, name)
		}
	}
	if key && failed == nil {
		if failed = os.Remove(filepath.Join(s.dir, KeyFile)); failed == nil {
			removed = append(removed, KeyFile)
		}
	}
	if len(removed) > 0 {
		log.Info("start refused: removed what it had created in the data dir", "path", s.dir, "removed", removed)
	}
	if failed != nil {
		return errors.Join(refused, fmt.Errorf("the refused start could not remove what it created in %s: %w", s.dir, failed))
	}
	return refused
}

// undoDir, when the start was refused, removes the data dir if this start
// made it and left it empty. Run it once the lock is released (the pid
// file is gone).
func (s *startFiles) undoDir(refused error) error {
	if refused == nil || s.committed || !s.createdDir {
		return refused
	}
	if ents, err := os.ReadDir(s.dir); err != nil || len(ents) > 0 {
		return refused // something stayed; undoEntries said why, if it should not have
	}
	if err := os.Remove(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.Join(refused, fmt.Errorf("the refused start could not remove the data dir it made: %w", err))
	}
	return refused
}
