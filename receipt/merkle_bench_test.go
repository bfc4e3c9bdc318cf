package receipt

import (
	"encoding/binary"
	"testing"
)

const benchLeaves = 1 << 20 // 1,048,576

func benchLeafHashes() [][32]byte {
	leaves := make([][32]byte, benchLeaves)
	var b [8]byte
	for i := range leaves {
		binary.BigEndian.PutUint64(b[:], uint64(i))
		leaves[i] = LeafHash(b[:])
	}
	return leaves
}

func BenchmarkTreeBuild1M(b *testing.B) {
	leaves := benchLeafHashes()
	b.ResetTimer()
	for b.Loop() {
		NewTreeFromLeaves(leaves)
	}
}

func BenchmarkAppend(b *testing.B) {
	t := &Tree{}
	var leaf [32]byte
	for i := 0; b.Loop(); i++ {
		leaf[0] = byte(i)
		t.Append(leaf)
	}
}

func BenchmarkInclusionProof1M(b *testing.B) {
	t := NewTreeFromLeaves(benchLeafHashes())
	size := t.Size() - 3 // a ragged size exercises the non-lookup path
	for i := uint64(0); b.Loop(); i++ {
		if _, err := t.InclusionProof((i*7919)%size, size); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoot1M(b *testing.B) {
	t := NewTreeFromLeaves(benchLeafHashes())
	for i := uint64(0); b.Loop(); i++ {
		if _, err := t.Root(t.Size() - i%1000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyInclusion1M(b *testing.B) {
	t := NewTreeFromLeaves(benchLeafHashes())
	size := t.Size() - 3
	leaves := benchLeafHashes()
	root, _ := t.Root(size)
	p, _ := t.InclusionProof(12345, size)
	for b.Loop() {
		if err := VerifyInclusion(leaves[12345], 12345, size, p, root); err != nil {
			b.Fatal(err)
		}
	}
}
