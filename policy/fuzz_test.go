package policy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse: no input may panic Parse; an accepted policy has a well-formed
// hash that the same bytes reproduce; a rejected one comes back as *Errors
// whose lines exist in the input.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../examples/policies/*.toml")
	more, _ := filepath.Glob("testdata/*.toml")
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, c := range invalidCases {
		f.Add(doc(c.toml))
	}
	for _, c := range bindingCases {
		f.Add(doc(c.toml))
	}
	f.Add([]byte(matchPolicy))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.toml")
		if err != nil {
			var perr *Errors
			if !errors.As(err, &perr) || len(*perr) == 0 {
				t.Fatalf("error is not *Errors: %v", err)
			}
			lines := 1
			for _, b := range data {
				if b == '\n' {
					lines++
				}
			}
			for _, e := range *perr {
				if e.Line < 0 || e.Line > lines {
					t.Fatalf("line %d of a %d-line input: %v", e.Line, lines, e)
				}
			}
			return
		}
		if !hexHash.MatchString(p.Hash) {
			t.Fatalf("hash %q", p.Hash)
		}
		q, err := Parse(data, "again.toml")
		if err != nil || q.Hash != p.Hash {
			t.Fatalf("re-parse: %v, hash %s vs %s", err, q.Hash, p.Hash)
		}
		// The scanner must have seen every table the parser decoded, or
		// errors about them would point at the wrong line.
		pos, _ := scanPositions(data)
		seen := func(path ...string) {
			if _, ok := pos.lines[pathKey(path)]; !ok {
				t.Fatalf("scanner missed %v", path)
			}
		}
		for i := range p.Servers {
			seen("servers", idx(i))
		}
		for i, g := range p.Grants {
			seen("grants", idx(i))
			if g.Approval != nil {
				for j := range g.Approval.Approvers {
					seen("grants", idx(i), "approval", "approvers", idx(j), "public_key")
				}
			}
		}
	})
}

// FuzzInputSchema: no declared input_schema may panic the policy's
// compilation, nor, once compiled, the validation of a call's arguments.
func FuzzInputSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1,"default":2}},"required":["a"],"additionalProperties":false}`,
		`{"type":"object","$defs":{"n":{"type":"string","pattern":"^x"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`,
		`{"type":"object","allOf":[{"$ref":"#"}],"properties":{"a":{"anyOf":[{"type":"null"},{"items":{"$ref":"#"}}]}}}`,
		`{"type":"object","$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":["b"]}}`,
		`{"type":"object","properties":{"a":{"default":1,"allOf":[{"$ref":"#/properties/a"}]}}}`,
	} {
		f.Add(s, `{"a":1}`)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		s, err := compileInputSchema(schema)
		if err != nil {
			if s != nil {
				t.Fatal("a schema with an error")
			}
			return
		}
		_ = s.Validate([]byte(args))
		_ = s.Validate(nil)
	})
}
