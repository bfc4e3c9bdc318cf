package boltstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/receipt"
)

// stallingWriter is a slow client: it takes the first write, then blocks
// every later one until released.
type stallingWriter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	writes   int
	stalled  chan struct{} // closed when a write first blocks
	released chan struct{}
}

func newStallingWriter() *stallingWriter {
	return &stallingWriter{stalled: make(chan struct{}), released: make(chan struct{})}
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if n > 1 {
		if n == 2 {
			close(w.stalled)
		}
		<-w.released
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// goroutineStacksWith returns the stacks of the goroutines whose stack
// mentions fn: what a stuck commit is waiting on.
func goroutineStacksWith(fn string) string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// An export to a client that reads slowly must not hold up commits: once
// the file outgrows bbolt's memory mapping, the commit that grows it
// remaps, and a remap waits for every open read transaction to end. So
// the export may not keep one open while it waits on its client.
func TestExportDoesNotHoldUpCommitsThatRemap(t *testing.T) {
	key := keys.FromSeed(bytes.Repeat([]byte{21}, 32))
	path := filepath.Join(t.TempDir(), "chio.db")
	log := receipt.NewLog(key, receipt.LogOptions{})
	s, err := boltstore.Open(path, key, boltstore.Options{NoSync: true, MmapSize: 1 << 20, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := log.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	if _, err := synth.Generate(ctx, s, key, synth.Config{Receipts: 3000, Days: 1, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}

	w := newStallingWriter()
	exported := make(chan error, 1)
	go func() { exported <- s.Export(ctx, w) }()
	select {
	case <-w.stalled: // the client has stopped reading mid-export
	case err := <-exported:
		t.Fatalf("export ended without blocking on its client (%v): make the store larger", err)
	}

	// Grow the file to well past twice its size: past any mapping the
	// store holds now, so some commit must remap. The checkpoints sit at
	// tree sizes beyond the log, outside what the export covers.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	blob := bytes.Repeat([]byte{'c'}, 1<<20)
	n := int(2*fi.Size()>>20) + 8
	start := time.Now()
	committed := make(chan error, 1)
	go func() {
		for i := range n {
			if err := s.PutCheckpoint(ctx, 1<<40+uint64(i), blob); err != nil {
				committed <- err
				return
			}
		}
		committed <- nil
	}()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		stuck := goroutineStacksWith("(*DB).mmap")
		close(w.released)
		err := <-committed
		t.Fatalf("%d commits (%d MiB) still waiting after 5s behind a stalled export; released at 5s, they finished at %v (err %v); waiting in:\n%s",
			n, n, time.Since(start).Round(time.Millisecond), err, stuck)
	}
	grown, _ := os.Stat(path)
	t.Logf("%d commits grew the file from %d to %d bytes in %v while the export waited on its client",
		n, fi.Size(), grown.Size(), time.Since(start).Round(time.Millisecond))

	close(w.released)
	if err := <-exported; err != nil {
		t.Fatal(err)
	}
	rep, err := receipt.VerifyExport(bytes.NewReader(w.buf.Bytes()), receipt.VerifyOptions{KernelKey: key.Public()})
	if err != nil || !rep.OK() || rep.Receipts != 3000 {
		t.Fatalf("export after the commits: %v %+v", err, rep)
	}
}
