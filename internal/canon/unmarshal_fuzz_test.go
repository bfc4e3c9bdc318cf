package canon

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fuzzed is everything without its ",string" field: there the v1 package
// and encoding/json differ on spellings ("+0" is taken by the one only),
// and chio has no such field.
type fuzzed struct {
	Embedded
	*inner   `json:"-"`
	S        string            `json:"s"`
	Opt      string            `json:"opt,omitempty"`
	Ptr      *int64            `json:"ptr,omitempty"`
	N        json.Number       `json:"n"`
	Raw      json.RawMessage   `json:"raw"`
	Any      any               `json:"any"`
	Meta     map[string]any    `json:"meta"`
	List     []any             `json:"list"`
	Nums     map[string]string `json:"nums"`
	Bytes    []byte            `json:"bytes"`
	When     time.Time         `json:"when"`
	Inner    inner             `json:"inner"`
	Inners   []inner           `json:"inners"`
	Untagged bool
	Skipped  string `json:"-"`
}

// FuzzUnmarshal: Unmarshal is the strict decoder of every API body, token
// and argument. Whatever it accepts, Check accepts; encoding/json (with
// UseNumber and DisallowUnknownFields) decodes to the same value, since
// exact names are a subset of what it matches; and the value survives
// encoding/json's encoding and Unmarshal again unchanged.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"e":"emb","s":"x","opt":"o","ptr":-7,"n":12.5,"raw":{"b":[1,2],"a":"z"},"any":{"k":[1.5,2,{"m":-3}],"t":true,"z":null},` +
			`"meta":{"units":450,"currency":"USD","nested":{"v":1e2}},"list":[1,"a",null,[2]],"nums":{"a":"1"},"bytes":"aGk=",` +
			`"when":"2026-01-02T03:04:05.123456789Z","inner":{"x":3},"inners":[{"x":1},{"x":2}],"Untagged":true}`,
		`{"any":7,"n":"3.25","meta":null,"list":[],"raw":null,"ptr":null}`,
		`{}`,
		`{"any":"s","inner":{},"inners":null}`,
		`{"A":1}`, `{"s":1}`, `{"n":{}}`, `{"ptr":9007199254740993}`, `{"raw":[1e400]}`, `{"s":"a","s":"b"}`,
		`{"meta":{"cost":1,"co\u017ft":2}}`, `{"inners":[{"x":1.0}]}`, `{"raw":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got fuzzed
		if err := Unmarshal(raw, &got); err != nil {
			return
		}
		if err := Check(raw); err != nil {
			t.Fatalf("Unmarshal accepted what Check refuses: %v\n%s", err, raw)
		}
		var want fuzzed
		if err := v1Decode(raw, &want); err != nil {
			t.Fatalf("Unmarshal accepted what encoding/json refuses: %v\n%s", err, raw)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s:\nencoding/json %#v\nUnmarshal     %#v", raw, want, got)
		}
		again, err := json.Marshal(got)
		if err != nil {
			return // a time.Time outside encoding/json's range
		}
		var back fuzzed
		if err := Unmarshal(again, &back); err != nil {
			t.Fatalf("re-encoded value refused: %v\n%s", err, again)
		}
		// RawMessage is kept as received; compare it canonically.
		gr, _ := Canonicalize(nonEmpty(got.Raw))
		br, _ := Canonicalize(nonEmpty(back.Raw))
		got.Raw, back.Raw = gr, br
		if got.N == "" { // encoding/json writes an empty Number as 0
			got.N = "0"
		}
		if !reflect.DeepEqual(got, back) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", got, back)
		}
	})
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
