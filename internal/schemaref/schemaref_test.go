package schemaref

import (
	"strings"
	"testing"
)

func TestCheckLoops(t *testing.T) {
	loops := []string{
		`{"type":"object","allOf":[{"$ref":"#"}]}`,
		`{"type":"object","$ref":"#"}`,
		`{"type":"object","anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"not":{"$ref":"#/$defs/b"}},"b":{"oneOf":[{"$ref":"#"}]}}}`,
		`{"type":"object","if":{"$ref":"#/$defs/a"},"$defs":{"a":{"then":{"$ref":"#/$defs/a"}}}}`,
		`{"type":"object","dependentSchemas":{"x":{"$ref":"#"}}}`,
		`{"type":"object","dependencies":{"x":{"$ref":"#"}}}`,
		`{"type":"object","AllOf":[{"$REF":"#"}]}`, // keywords are read case-insensitively
		`{"type":"object","definitions":{"a":{"$ref":"#/definitions/a"}},"properties":{"p":{"$ref":"#/definitions/a"}}}`,
	}
	for _, s := range loops {
		if err := CheckLoops([]byte(s)); err == nil || !strings.Contains(err.Error(), "validation would never end") {
			t.Errorf("%s: err = %v; want a loop", s, err)
		}
	}
	unsupported := []string{
		`{"type":"object","properties":{"a":{"$ref":"#node"}},"$defs":{"n":{"$anchor":"node"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`,
		`{"type":"object","properties":{"a":{"$dynamicRef":"#meta"}}}`,
		`{"type":"object","$defs":{"a":{"$id":"https://example.com/a"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/properties"}}}`,
	}
	for _, s := range unsupported {
		if err := CheckLoops([]byte(s)); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
	fine := []string{
		`{"type":"object"}`,
		`true`,
		`{"$id":"https://example.com/s","type":"object","properties":{"child":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
		`{"type":"object","allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"required":["x"]}}}`,
		`{"type":"object","properties":{"a~b":{"type":"string"},"c/d":{"$ref":"#/properties/a~0b"}},"additionalProperties":{"$ref":"#/properties/c~1d"}}`,
		`{"type":"object","items":[{"$ref":"#"}],"dependencies":{"a":["b"]}}`,
	}
	for _, s := range fine {
		if err := CheckLoops([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
