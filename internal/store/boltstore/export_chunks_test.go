package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/receipt"
)

// withoutExportTime returns an export with its header's exported_at
// zeroed: the one thing two exports of an unchanged store may differ in.
func withoutExportTime(t *testing.T, export []byte) []byte {
	t.Helper()
	header, rest, _ := bytes.Cut(export, []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatal(err)
	}
	if _, ok := h["exported_at"]; !ok {
		t.Fatalf("header has no exported_at: %s", header)
	}
	h["exported_at"] = 0
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(out, '\n'), rest...)
}

// The chunked export writes exactly what one read transaction did, for
// receipts, checkpoints and approval and batch evidence, however the
// chunks fall.
func TestChunkedExportEqualsOneTransaction(t *testing.T) {
	key := keys.FromSeed(bytes.Repeat([]byte{22}, 32))
	log := receipt.NewLog(key, receipt.LogOptions{})
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "chio.db"), key, boltstore.Options{NoSync: true, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := log.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	for round := range 10 { // a checkpoint after each round
		if _, err := synth.Generate(ctx, s, key, synth.Config{Receipts: 300, Days: 2, Seed: uint64(9 + round)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := log.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	log.Close(ctx) // the store no longer changes

	var oracle bytes.Buffer
	if err := boltstore.ExportOneTxForTest(s, ctx, &oracle); err != nil {
		t.Fatal(err)
	}
	want := withoutExportTime(t, oracle.Bytes())
	rep, err := receipt.VerifyExport(bytes.NewReader(oracle.Bytes()), receipt.VerifyOptions{KernelKey: key.Public()})
	if err != nil || !rep.OK() {
		t.Fatalf("oracle export: %v %+v", err, rep)
	}
	if rep.Receipts != 3000 || rep.Checkpoints < 10 || rep.Tokens == 0 || rep.BatchTokens == 0 {
		t.Fatalf("the store lacks what the test compares: %+v", rep)
	}

	for _, c := range []struct {
		name           string
		entries, bytes int
	}{
		{"default", 0, 0},
		{"7 entries", 7, 1 << 30},
		{"one entry", 1, 1 << 30},
		{"one entry by bytes", 1 << 30, 1},
		{"4 KiB", 1 << 30, 4 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.entries > 0 {
				defer boltstore.SetExportChunkForTest(c.entries, c.bytes)()
			}
			if got := withoutExportTime(t, exportOf(t, s)); !bytes.Equal(got, want) {
				t.Fatalf("chunked export differs from the one-transaction export (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

// cancelAfterFirstWrite cancels the export's context when the export
// first writes: the client went away mid-export.
type cancelAfterFirstWrite struct{ cancel context.CancelFunc }

func (w cancelAfterFirstWrite) Write(p []byte) (int, error) { w.cancel(); return len(p), nil }

// Cancelling the context ends a chunked export at the next chunk.
func TestChunkedExportStopsWhenCancelled(t *testing.T) {
	key := keys.FromSeed(bytes.Repeat([]byte{23}, 32))
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "chio.db"), key, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: 3000, Days: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	defer boltstore.SetExportChunkForTest(100, 1<<30)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Export(ctx, cancelAfterFirstWrite{cancel}); !errors.Is(err, context.Canceled) {
		t.Fatalf("export after its context ended: %v", err)
	}
	if err := s.Export(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
}
