package envelope

import (
	"encoding/json"
	"errors"
	"testing"
)

type state struct {
	Status   string          `json:"status"`
	Output   json.RawMessage `json:"output"`
	Approval *struct {
		Approver string `json:"approver"`
	} `json:"approval"`
}

func TestNamedAlikeRefused(t *testing.T) {
	for _, body := range []string{
		`{"status":"denied","Status":"allowed"}`,
		`{"status":"denied","status":"allowed"}`,
		`{"status":"denied","\u0073tatus":"allowed"}`, // spelled apart, the same name
		`{"units":1,"unit\u017f":2}`,                  // long s folds to s
		`{"status":"allowed","approval":{"approver":"a","APPROVER":"b"}}`,
	} {
		v := state{Status: "before"}
		if err := Unmarshal([]byte(body), &v); !errors.Is(err, ErrNamedAlike) {
			t.Errorf("%s: err %v, want ErrNamedAlike", body, err)
		}
		if v.Status != "before" {
			t.Errorf("%s: refused, yet decoded (status %q)", body, v.Status)
		}
	}
}

func TestValuesPassedThrough(t *testing.T) {
	output := `{"status":"a","Status":"b","status":"c", "approval":{"x":1,"x":2}}`
	body := `{"status":"allowed","output":` + output + `,"other":{"k":1,"K":2},"approval":{"approver":"a"}}`
	var v state
	if err := Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if string(v.Output) != output || v.Status != "allowed" || v.Approval.Approver != "a" {
		t.Fatalf("%+v, output %s", v, v.Output)
	}
}

func TestNamesMatchedExactly(t *testing.T) {
	var v state
	if err := Unmarshal([]byte(`{"STATUS":"allowed"}`), &v); err != nil || v.Status != "" {
		t.Fatalf("status %q, err %v: want no status", v.Status, err)
	}
}
