package kernel

import (
	"testing"

	"github.com/chiokernel/chio/internal/canon"
)

func TestProofPayloadIsCanonical(t *testing.T) {
	for _, c := range [][5]string{
		{"req-1", "cap-1", "demo", "echo", "ab"},
		{"r\"q", "c\\p", "sérvér", "tööl😀", "\u2028<&>"},
	} {
		got, err := proofPayload(c[0], c[1], c[2], c[3], c[4], 1_800_000_000)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := canon.Marshal(map[string]any{"request_id": c[0], "capability_id": c[1], "server": c[2],
			"tool": c[3], "parameter_hash": c[4], "issued_at": 1_800_000_000})
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	if _, err := proofPayload("a\xff", "c", "s", "t", "p", 1); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}
