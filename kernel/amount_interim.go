package kernel

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/chiokernel/chio/policy"
)

// DeriveAmount reads the amount a tool declares (JSON Pointers) from the
// call's arguments; nil when the tool declares none. Interim version until
// the guard work lands.
func DeriveAmount(t *policy.Tool, args json.RawMessage) (*Amount, error) {
	if t == nil || t.Amount == "" {
		return nil, nil
	}
	var v any
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	get := func(ptr string) (any, bool) {
		cur := v
		for _, tok := range strings.Split(ptr, "/")[1:] {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[tok]; !ok {
				return nil, false
			}
		}
		return cur, true
	}
	a, ok := get(t.Amount)
	n, isNum := a.(json.Number)
	if !ok || !isNum {
		return nil, errors.New("amount missing at " + t.Amount)
	}
	units, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || units < 0 {
		return nil, errors.New("amount at " + t.Amount + " is not a non-negative integer")
	}
	out := &Amount{Units: units}
	if t.Currency != "" {
		c, ok := get(t.Currency)
		s, isStr := c.(string)
		if !ok || !isStr || s == "" {
			return nil, errors.New("currency missing at " + t.Currency)
		}
		out.Currency = s
	}
	return out, nil
}
