package receipt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

func checkpointKey(b byte) keys.PrivateKey { return keys.FromSeed(bytes.Repeat([]byte{b}, 32)) }

func signedCheckpoint(t *testing.T) (keys.PrivateKey, []byte, *Checkpoint, [32]byte) {
	t.Helper()
	k := checkpointKey(1)
	root := NewTreeFromLeaves(mtLeaves(mtData(10)))
	r := mustRoot(t, root, 10)
	raw, c, err := SignCheckpoint(k, 10, r, time.UnixMilli(1_700_000_000_123))
	if err != nil {
		t.Fatal(err)
	}
	return k, raw, c, r
}

func TestCheckpointRoundTrip(t *testing.T) {
	k, raw, c, r := signedCheckpoint(t)
	got, err := VerifyCheckpoint(raw, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if *got != *c {
		t.Fatalf("verified %+v, signed %+v", got, c)
	}
	if got.Schema != CheckpointSchema || got.TreeSize != 10 || got.Timestamp != 1_700_000_000_123 ||
		got.KernelKey != k.Public().String() || len(got.Signature) != 128 {
		t.Fatalf("fields: %+v", got)
	}
	if gr, err := got.Root(); err != nil || gr != r {
		t.Fatalf("root: %x %v", gr, err)
	}
	// The signed bytes are canonical: what is stored is what is hashed/sent.
	if cb, _ := canon.Canonicalize(raw); !bytes.Equal(cb, raw) {
		t.Fatal("checkpoint bytes not canonical")
	}
	for _, f := range []string{`"schema":"chio.checkpoint.v1"`, `"tree_size":10`, `"root_hash":"` + hex.EncodeToString(r[:]) + `"`, `"timestamp":1700000000123`} {
		if !bytes.Contains(raw, []byte(f)) {
			t.Errorf("missing %s in %s", f, raw)
		}
	}
	// Empty tree.
	raw0, _, err := SignCheckpoint(k, 0, EmptyRoot(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyCheckpoint(raw0, k.Public()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SignCheckpoint(k, 1<<53+1, r, time.Now()); !errors.Is(err, ErrInvalidCheckpoint) {
		t.Errorf("tree_size > 2^53: %v", err)
	}
}

func TestCheckpointRejections(t *testing.T) {
	k, raw, c, _ := signedCheckpoint(t)
	other := checkpointKey(2)

	// Flip one hex digit of root_hash in the received bytes.
	i := bytes.Index(raw, []byte(c.RootHash))
	flipped := bytes.Clone(raw)
	if flipped[i] == '0' {
		flipped[i] = '1'
	} else {
		flipped[i] = '0'
	}
	if _, err := VerifyCheckpoint(flipped, k.Public()); !errors.Is(err, signed.ErrBadSignature) {
		t.Errorf("flipped root byte: %v", err)
	}

	// Verified against a different kernel key.
	if _, err := VerifyCheckpoint(raw, other.Public()); !errors.Is(err, signed.ErrBadSignature) {
		t.Errorf("wrong kernel key: %v", err)
	}

	// Signed by k but naming other as its kernel key: fails under either key.
	lie := Checkpoint{Schema: CheckpointSchema, TreeSize: c.TreeSize, RootHash: c.RootHash, Timestamp: c.Timestamp, KernelKey: other.Public().String()}
	lieRaw, err := signed.Sign(k, CheckpointSchema, lie)
	if err != nil {
		t.Fatal(err)
	}
	for _, pub := range []keys.PublicKey{k.Public(), other.Public()} {
		if _, err := VerifyCheckpoint(lieRaw, pub); !errors.Is(err, signed.ErrBadSignature) {
			t.Errorf("kernel_key names another key, verify with %s: %v", pub, err)
		}
	}

	// Duplicate key: a second tree_size member ahead of the signed one.
	dup := bytes.Replace(raw, []byte(`{`), []byte(`{"tree_size":99,`), 1)
	if _, err := VerifyCheckpoint(dup, k.Public()); !errors.Is(err, canon.ErrDuplicateKey) || !errors.Is(err, ErrInvalidCheckpoint) {
		t.Errorf("duplicate key: %v", err)
	}

	bad := map[string][]byte{
		"unknown field":   bytes.Replace(raw, []byte(`{`), []byte(`{"extra":1,`), 1),
		"wrong schema":    bytes.Replace(raw, []byte(CheckpointSchema), []byte(Schema), 1),
		"upper-case root": bytes.Replace(raw, []byte(c.RootHash), []byte(strings.ToUpper(c.RootHash)), 1),
		"not json":        []byte(`nope`),
	}
	for name, b := range bad {
		if _, err := VerifyCheckpoint(b, k.Public()); !errors.Is(err, ErrInvalidCheckpoint) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Missing signature.
	unsigned := bytes.Replace(raw, []byte(`"signature":"`+c.Signature+`",`), nil, 1)
	if _, err := VerifyCheckpoint(unsigned, k.Public()); !errors.Is(err, signed.ErrMissingSignature) {
		t.Errorf("missing signature: %v", err)
	}
}
