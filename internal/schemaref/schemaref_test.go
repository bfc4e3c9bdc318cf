package schemaref

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
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
		if err := Check([]byte(s)); err == nil || !strings.Contains(err.Error(), "validation would never end") {
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
		if err := Check([]byte(s)); err == nil {
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
		if err := Check([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// A recursive subschema that can be applied more than once to one part of
// the instance makes validation cost exponential in its depth.
func TestCheckCost(t *testing.T) {
	costly := []string{
		`{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`,
		`{"type":"object","allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}],"$defs":{"n":{"properties":{"a":{"$ref":"#/$defs/n"}}}}}`,
		// A union whose variants share a recursive child: each level
		// validates the child against every variant.
		`{"type":"object","properties":{"e":{"$ref":"#/$defs/expr"}},"$defs":{"expr":{"oneOf":[{"$ref":"#/$defs/sum"},{"$ref":"#/$defs/product"}]},` +
			`"sum":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/expr"}}}},` +
			`"product":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/expr"}}}}}}`,
		// One member matched by properties and patternProperties.
		`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"unevaluatedProperties":{"$ref":"#"}}`,
		`{"type":"object","items":{"$ref":"#"},"contains":{"$ref":"#"}}`,
		// Polynomial, not exponential (b is applied n times at depth n),
		// still refused: a chain of such would be n^k.
		`{"type":"object","properties":{"x":{"allOf":[{"$ref":"#"},{"$ref":"#/$defs/b"}]}},"$defs":{"b":{"properties":{"x":{"$ref":"#/$defs/b"}}}}}`,
		// Errs toward refusing: whether two patterns match a common name
		// is not decided.
		`{"type":"object","patternProperties":{"^a":{"$ref":"#"},"^b":{"$ref":"#"}}}`,
	}
	for _, s := range costly {
		if err := Check([]byte(s)); err == nil || !strings.Contains(err.Error(), "more than once") {
			t.Errorf("%s: err = %v; want it refused as costly", s, err)
		}
	}
	fine := []string{
		`{"type":"object","properties":{"left":{"$ref":"#"},"right":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"additionalProperties":{"$ref":"#"}}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^b":{"$ref":"#"}},"additionalProperties":{"$ref":"#"}}`,
		`{"type":"object","patternProperties":{"^b":{"$ref":"#"}},"additionalProperties":{"$ref":"#"}}`,
		`{"type":"object","properties":{"v":{"$ref":"#/$defs/json"}},"$defs":{"json":{"anyOf":[{"type":"string"},` +
			`{"type":"array","items":{"$ref":"#/$defs/json"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/json"}}]}}}`,
		`{"type":"object","properties":{"l":{"prefixItems":[{"$ref":"#"}],"items":{"$ref":"#"}}}}`,
		`{"type":"object","properties":{"l":{"items":[{"$ref":"#"}],"additionalItems":{"$ref":"#"}}}}`,
		// A part applied twice is fine when nothing recursive is.
		`{"type":"object","allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"properties":{"c":{"$ref":"#"}},"$defs":{"a":{"required":["x"]}}}`,
		// One recursive subschema through one route per level, under a
		// union of non-recursive variants.
		`{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
	}
	for _, s := range fine {
		if err := Check([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// A schema too large to judge within the bounds is refused, not waved
// through.
func TestCheckCostTooComplex(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","allOf":[{"$ref":"#/$defs/d0"}],"properties":{"c":{"$ref":"#"}},"$defs":{`)
	const n = 2000
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"}]},`, i, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{}}}`, n)
	if err := Check([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "too many subschemas") {
		t.Fatalf("err = %v; want it refused as too complex", err)
	}
}

// Repetition without recursion multiplies too: each definition applies the
// next twice, so 40 of them would apply the last 2^40 times to one value.
func TestCheckRoutes(t *testing.T) {
	chain := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","allOf":[{"$ref":"#/$defs/d0"}],"$defs":{`)
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"required":["x"]}}}`, n)
		return b.String()
	}
	if err := Check([]byte(chain(40))); err == nil || !strings.Contains(err.Error(), "routes") {
		t.Fatalf("err = %v; want it refused", err)
	}
	if err := Check([]byte(chain(4))); err != nil {
		t.Fatalf("a short chain: %v", err)
	}
}
