package receipt

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"
)

// memCheckpoints is an in-memory CheckpointStore.
type memCheckpoints struct {
	mu  sync.Mutex
	cps map[uint64][]byte
	err error
}

func (m *memCheckpoints) PutCheckpoint(_ context.Context, size uint64, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if m.cps == nil {
		m.cps = map[uint64][]byte{}
	}
	m.cps[size] = raw
	return nil
}

func (m *memCheckpoints) sizes() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint64
	for s := range m.cps {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *memCheckpoints) LatestCheckpoint() ([]byte, error) {
	s := m.sizes()
	if len(s) == 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cps[s[len(s)-1]], nil
}

func (m *memCheckpoints) Checkpoints(from uint64, fn func(uint64, []byte) bool) error {
	for _, s := range m.sizes() {
		if s >= from {
			m.mu.Lock()
			raw := m.cps[s]
			m.mu.Unlock()
			if !fn(s, raw) {
				break
			}
		}
	}
	return nil
}

func logLeaf(i int) ([]byte, [32]byte) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return b[:], LeafHash(b[:])
}

func TestLogCheckpointsProofsAndConsistency(t *testing.T) {
	store := &memCheckpoints{}
	l := NewLog(fxKernel, LogOptions{Every: 10, Interval: time.Hour})
	var leaves [][32]byte
	for i := 1; i <= 5; i++ {
		_, h := logLeaf(i)
		leaves = append(leaves, h)
	}
	l.Load(leaves)
	ctx := context.Background()
	if err := l.Start(ctx, store); err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	// Start signs the tree it found.
	if _, cp, _ := l.Latest(); cp.TreeSize != 5 {
		t.Fatalf("start checkpoint %d", cp.TreeSize)
	}
	// Every = 10: growing by 10 kicks the signer without waiting for the tick.
	for i := 6; i <= 15; i++ {
		_, h := logLeaf(i)
		l.Append(uint64(i), [][32]byte{h})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, cp, _ := l.Latest(); cp.TreeSize == 15 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after 10 receipts: %v", store.sizes())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A receipt newer than the latest checkpoint gets a fresh one.
	raw16, h16 := logLeaf(16)
	l.Append(16, [][32]byte{h16})
	cpRaw, cp, err := l.Cover(ctx, 16)
	if err != nil || cp.TreeSize != 16 {
		t.Fatalf("cover: %v %+v", err, cp)
	}
	if _, err := VerifyCheckpoint(cpRaw, fxKernel.Public()); err != nil {
		t.Fatal(err)
	}
	p, err := l.Prove(16, raw16, cp)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := cp.Root()
	if err := p.Verify(raw16, root); err != nil {
		t.Fatal(err)
	}
	raw3, _ := logLeaf(3)
	p3, err := l.Prove(3, raw3, cp)
	if err != nil || p3.Verify(raw3, root) != nil {
		t.Fatalf("prove 3: %v", err)
	}
	// The stored bytes no longer hash to the logged leaf: refuse to prove.
	if _, err := l.Prove(3, []byte("tampered"), cp); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := l.Prove(17, raw16, cp); !errors.Is(err, ErrNotInLog) {
		t.Fatalf("beyond: %v", err)
	}
	// Consistency between two stored checkpoints.
	old, _ := store.cps[5], 0
	oldCp, _ := VerifyCheckpoint(old, fxKernel.Public())
	c, err := l.Consistency(5, 16)
	if err != nil {
		t.Fatal(err)
	}
	r5, _ := oldCp.Root()
	if err := c.Verify(r5, root); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Consistency(5, 99); !errors.Is(err, ErrNotInLog) {
		t.Fatalf("consistency beyond: %v", err)
	}
	if got, _ := l.CheckpointAt(5); string(got) != string(old) {
		t.Fatal("CheckpointAt(5)")
	}
	if got, _ := l.CheckpointAt(6); got != nil {
		t.Fatal("CheckpointAt(6) invented a checkpoint")
	}
	// Cover waits for a receipt whose commit has not reached the log yet.
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, h := logLeaf(17)
		l.Append(17, [][32]byte{h})
	}()
	if _, cp, err := l.Cover(ctx, 17); err != nil || cp.TreeSize != 17 {
		t.Fatalf("cover 17: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, _, err := l.Cover(short, 99); !errors.Is(err, ErrNotInLog) {
		t.Fatalf("cover 99: %v", err)
	}
}

func TestLogRefusesAlteredStore(t *testing.T) {
	store := &memCheckpoints{}
	var leaves [][32]byte
	for i := 1; i <= 8; i++ {
		_, h := logLeaf(i)
		leaves = append(leaves, h)
	}
	l := NewLog(fxKernel, LogOptions{})
	l.Load(leaves)
	ctx := context.Background()
	if err := l.Start(ctx, store); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)

	// A receipt changed after it was checkpointed.
	altered := append([][32]byte(nil), leaves...)
	altered[2][0] ^= 1
	l2 := NewLog(fxKernel, LogOptions{})
	l2.Load(altered)
	if err := l2.Start(ctx, store); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("altered leaf: %v", err)
	}
	// Receipts removed from the end.
	l3 := NewLog(fxKernel, LogOptions{})
	l3.Load(leaves[:6])
	if err := l3.Start(ctx, store); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
	// A checkpoint signed by another key.
	root, _ := NewTreeFromLeaves(leaves).Root(8)
	forged, _, _ := SignCheckpoint(fxOther, 8, root, time.Now())
	store.cps[8] = forged
	l4 := NewLog(fxKernel, LogOptions{})
	l4.Load(leaves)
	if err := l4.Start(ctx, store); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("forged checkpoint: %v", err)
	}
}

func TestLogAppendGapFailsClosed(t *testing.T) {
	l := NewLog(fxKernel, LogOptions{})
	ctx := context.Background()
	if err := l.Start(ctx, &memCheckpoints{}); err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	_, h := logLeaf(1)
	l.Append(1, [][32]byte{h})
	l.Append(3, [][32]byte{h}) // seq 2 never arrived
	if _, _, err := l.Checkpoint(ctx); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("checkpoint after a gap: %v", err)
	}
	if _, err := l.Consistency(0, 1); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("consistency after a gap: %v", err)
	}
}

func TestStats(t *testing.T) {
	st, err := NewStats("metadata.approver_display_name")
	if err != nil {
		t.Fatal(err)
	}
	for i, lat := range []float64{100, 200, 300, 400, 5000} {
		name := "Finance Lead"
		if i == 4 {
			name = "CFO"
		}
		st.Add(&Receipt{Decision: Decision{Verdict: Allow}, Metadata: map[string]any{"approver_display_name": name, LatencyKey: lat}})
	}
	st.Add(&Receipt{Decision: Decision{Verdict: Allow}, Metadata: map[string]any{}})
	res := st.Result()
	if res.Total != 6 || len(res.Groups) != 3 {
		t.Fatalf("%+v", res)
	}
	g := res.Groups[0]
	if g.Key != "Finance Lead" || g.Count != 4 || *g.LatencyMs != (Latency{Avg: 250, P50: 200, P95: 400}) {
		t.Fatalf("first group %+v %+v", g, g.LatencyMs)
	}
	if res.Groups[1].Key != "" || res.Groups[1].LatencyMs != nil || res.Groups[2].Key != "CFO" {
		t.Fatalf("groups %+v", res.Groups)
	}
	for _, bad := range []string{"nope", "metadata.", "seq"} {
		if _, err := NewStats(bad); err == nil {
			t.Errorf("group_by %q accepted", bad)
		}
	}
}
