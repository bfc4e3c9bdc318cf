package boltstore

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/chiokernel/chio/kernel"
)

// hostile strings for call record fields: escapes, HTML characters, line
// separators, control characters, invalid UTF-8, non-ASCII.
var hostile = []string{"", "a", "allow-12345", "\"q\\", "<&>", "\u2028\u2029", "\x00\x01\x1f", "\xff\xfe", "é😀", "a\xc3", "\t\n\r"}

func randomRecord(rng *rand.Rand) *kernel.CallRecord {
	str := func() string { return hostile[rng.IntN(len(hostile))] + hostile[rng.IntN(len(hostile))] }
	raw := func() json.RawMessage {
		return []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"a":[1,2.5,-3e2,true,null,"<x>"]}`),
			json.RawMessage(`"\u00e9\ud83d\ude00"`), json.RawMessage(` { "sp" : [ ] } `), json.RawMessage(`null`)}[rng.IntN(6)]
	}
	return &kernel.CallRecord{RequestID: str(), Subject: str(), CapabilityID: str(), CapabilityExpiresAt: rng.Int64() - rng.Int64(),
		GrantID: str(), Server: str(), Tool: str(), Operation: str(), Action: str(), ParameterHash: str(),
		Arguments: raw(), Intent: raw(), Status: str(), Reason: str(), Guard: str(), ApprovalID: str(), ReceiptID: str(),
		Output: raw(), ToolError: str(), CreatedAt: rng.Int64N(1 << 50), UpdatedAt: int64(rng.IntN(3)), DecisionReceiptID: str(),
		Delivery: str(), Execution: str(), Attempts: rng.IntN(3)}
}

// tx.Call decodes with go-json-experiment's v1 semantics; on what PutCall
// writes it must give exactly encoding/json's result.
func TestCallDecodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 5000 {
		v, err := json.Marshal(randomRecord(rng))
		if err != nil {
			t.Fatal(err)
		}
		assertSameDecode(t, v)
		if t.Failed() {
			t.Fatalf("case %d: %s", i, v)
		}
	}
}

func assertSameDecode(t *testing.T, v []byte) {
	t.Helper()
	var want, got kernel.CallRecord
	werr := json.Unmarshal(v, &want)
	gerr := jsonv1.Unmarshal(v, &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: encoding/json %v, jsonv1 %v", v, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nencoding/json %+v\njsonv1        %+v", v, want, got)
	}
}

func FuzzCallDecodeMatchesEncodingJSON(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		v, _ := json.Marshal(randomRecord(rng))
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) { assertSameDecode(t, v) })
}
