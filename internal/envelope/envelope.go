// Package envelope reads chiod's JSON answers as every chio client reads
// them: the Go SDK, `chio call` and `chio await`, and the Python and
// TypeScript SDKs (testdata/sdk/call_outcomes.json holds them to it).
//
// encoding/json matches member names in any letter case and lets a later
// duplicate win, where the Python and TypeScript SDKs match names exactly:
// {"status":"denied","Status":"allowed"} read as allowed in Go and as
// denied elsewhere, and {"status":"denied","status":"allowed"} reads as
// whichever a parser keeps, the first or the last. chiod never sends two
// members named alike. So an answer whose own objects — its top level and
// its "approval" — hold two member names that are equal or differ only in
// letter case (Unicode simple folding, as strings.EqualFold) can be read
// two ways and is refused ([ErrNamedAlike]), and member names are matched
// exactly. The members' values (a tool's output, amended arguments) are
// never looked into: they are passed through as they are, whatever their
// own members are named.
//
// chiod's answers are UTF-8 (Go writes its strings so, and it checks a
// tool's output). An answer holding a byte sequence that is not UTF-8 is
// not chiod's and is refused ([ErrNotUTF8]), as the Python SDK refuses
// it, never read with U+FFFD in place of the bytes or passed on raw.
package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/chiokernel/chio/internal/canon"
)

// ErrNamedAlike is an answer that can be read two ways: two members of
// one of its own objects named alike.
var ErrNamedAlike = errors.New("two members named alike")

// ErrNotUTF8 is an answer holding bytes that are not UTF-8.
var ErrNotUTF8 = errors.New("not UTF-8")

// nested are the top-level members whose object is the envelope's own,
// read by the clients (a call's approval), not passed through.
var nested = map[string]bool{"approval": true}

// Unmarshal decodes data into v as encoding/json does, except that member
// names are matched exactly and an answer whose own objects hold two
// members named alike (ErrNamedAlike), or that is not UTF-8 (ErrNotUTF8),
// is refused, leaving v as it was.
func Unmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return ErrNotUTF8
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if err := checkNames(dec, true); err != nil {
		return err
	}
	return jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1(), jsonv2.MatchCaseInsensitiveNames(false))
}

// checkNames reads one value and, when it is an object, refuses two of its
// member names alike; at the top level it also checks the nested objects.
// Every other value is skipped unread.
func checkNames(dec *jsontext.Decoder, top bool) error {
	if dec.PeekKind() != '{' {
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	seen := make(map[string]string)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		key := canon.FoldKey(name)
		if prev, ok := seen[key]; ok {
			return fmt.Errorf("%w: %+q and %+q", ErrNamedAlike, prev, name)
		}
		seen[key] = name
		if top && nested[name] {
			err = checkNames(dec, false)
		} else {
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}
