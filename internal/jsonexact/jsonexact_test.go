package jsonexact

import (
	"encoding/json"
	"testing"
)

// Marshal writes what json.Marshal writes, except that raw members keep
// "<", ">" and "&" as they were, and nothing trails the value.
func TestMarshalKeepsRawBytes(t *testing.T) {
	v := struct {
		Raw  json.RawMessage `json:"raw"`
		Text string          `json:"text"`
		N    int             `json:"n"`
	}{Raw: json.RawMessage(`{"a":"<&>"}`), Text: "x<y", N: 3}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"raw":{"a":"<&>"},"text":"x<y","n":3}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	std, _ := json.Marshal(v)
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal(std, &b) != nil {
		t.Fatal("not JSON")
	}
	if ja, _ := json.Marshal(a); string(ja) != func() string { jb, _ := json.Marshal(b); return string(jb) }() {
		t.Fatalf("Marshal's value differs from json.Marshal's: %s vs %s", got, std)
	}
}

// MarshalIndent indents as json.MarshalIndent does, without escaping.
func TestMarshalIndentKeepsRawBytes(t *testing.T) {
	v := map[string]json.RawMessage{"a": json.RawMessage(`{"b":"<&>"}`)}
	got, err := MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": {\n    \"b\": \"<&>\"\n  }\n}"; string(got) != want {
		t.Fatalf("MarshalIndent = %q, want %q", got, want)
	}
}
