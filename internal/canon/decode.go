package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Decode checks raw exactly as Check does and returns it decoded in the
// same pass: objects as map[string]any, arrays as []any, strings, booleans,
// nil, and numbers as json.Number holding their literal (so that callers
// can read an amount exactly, never through a float). Like Check, it reads
// the document a second time only if a member name could fold together
// with another (see fold.go).
//
// It exists because the guards decode arguments on the hot path of every
// call: Check followed by encoding/json costs two decoders and three times
// the time of one pass.
func Decode(raw []byte) (any, error) {
	d := decoders.Get().(*pooledDecoder)
	defer d.release()
	d.r.Reset(raw)
	d.dec.Reset(&d.r)
	folds := false
	v, err := decodeValue(&d.dec, 0, &folds)
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		if err == nil {
			return nil, ErrTrailingData
		}
		return nil, classify(err)
	}
	if folds { // as in Check: compare names only if some name could fold
		if err := checkFolding(raw); err != nil {
			return nil, err
		}
	}
	return v, nil
}

type pooledDecoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

// release returns d to the pool; a pooled decoder must not keep the input
// alive.
func (d *pooledDecoder) release() {
	d.r.Reset(nil)
	d.dec.Reset(&d.r)
	decoders.Put(d)
}

// decodeValue reads one value whose container nesting so far is depth,
// setting *folds if a member name could fold together with another (see
// MayFold). Recursion is bounded by MaxDepth.
func decodeValue(dec *jsontext.Decoder, depth int, folds *bool) (any, error) {
	tok, err := dec.ReadToken()
	if err == io.EOF && depth == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrInvalid)
	}
	if err != nil {
		return nil, classify(err)
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		lit := tok.String()
		if err := checkNumber(lit); err != nil {
			return nil, err
		}
		return json.Number(lit), nil
	case '{':
		if depth+1 > MaxDepth {
			return nil, ErrTooDeep
		}
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, classify(err)
			}
			key := name.String() // before the next read voids the token
			*folds = *folds || MayFold(key)
			v, err := decodeValue(dec, depth+1, folds)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, classify(err)
		}
		return m, nil
	case '[':
		if depth+1 > MaxDepth {
			return nil, ErrTooDeep
		}
		l := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec, depth+1, folds)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, classify(err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("%w: unexpected %v", ErrInvalid, tok.Kind())
}
