package policy

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/chiokernel/chio/internal/keys"
)

// parseTOML runs the TOML parser into a generic tree. It returns the line and
// message of a syntax error, or ok.
func parseTOML(data []byte) (tree map[string]any, line int, msg string) {
	defer func() {
		// The parser panics on some internal inconsistencies rather than
		// returning an error; a bad file must never take chiod down.
		if r := recover(); r != nil {
			tree, line, msg = nil, 0, fmt.Sprintf("the TOML parser failed on this file: %v", r)
		}
	}()
	_, err := toml.Decode(string(data), &tree)
	if err == nil {
		return tree, 0, ""
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return nil, pe.Position.Line, "TOML syntax: " + clip(pe.Message)
	}
	return nil, 0, "TOML: " + clip(err.Error())
}

// decoder copies the generic TOML tree into the typed structs.
//
// BurntSushi/toml can decode into structs itself, but it stops at the first
// bad value (so one bad approver key would hide every other problem), reports
// the line of the last key with the same dotted name (all [[grants]] share
// names), and matches keys case-insensitively (Quorum = 2 would pass). This
// decoder reports every problem at its own line, and an unknown or miscased
// key is an error.
type decoder struct {
	probs  *problems
	fields map[reflect.Type]map[string]int // toml tag → field index
}

var (
	publicKeyType   = reflect.TypeFor[keys.PublicKey]()
	expressionsType = reflect.TypeFor[Expressions]()
	jsonTextType    = reflect.TypeFor[JSONText]()
)

func (d *decoder) value(path []string, v any, rv reflect.Value) {
	name := path[len(path)-1]
	if _, err := strconv.Atoi(name); err == nil && len(path) > 1 {
		name = path[len(path)-2] // a list element: name the list
	}
	if rv.Type() == publicKeyType {
		s, ok := v.(string)
		if !ok {
			d.probs.at(path, "%s must be a string like \"ed25519:<64 hex digits>\", not %s", name, describe(v))
			return
		}
		k, err := keys.ParsePublicKey(s)
		if err != nil {
			d.probs.at(path, "%s is not an acceptable Ed25519 public key: %v", name, err)
			return
		}
		rv.Set(reflect.ValueOf(k))
		return
	}
	if rv.Type() == jsonTextType {
		// Absent and empty would read alike: an empty value is refused
		// here, where it is still known to be written.
		s, ok := v.(string)
		if !ok {
			d.probs.at(path, "%s must be a string holding a JSON document (%s = '''{…}'''), not %s", name, name, describe(v))
			return
		}
		if s == "" {
			d.probs.at(path, "%s is empty: write the JSON document, or leave the key out", name)
			return
		}
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if _, ok := v.(map[string]any); !ok {
			hint := ""
			if rv.Type().Elem() == reflect.TypeFor[Threshold]() {
				hint = " like { threshold_units = 200, currency = \"USD\" }"
			}
			d.probs.at(path, "%s must be a table%s, not %s", name, hint, describe(v))
			return
		}
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		d.value(path, v, rv.Elem())
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.probs.at(path, "%s must be a table, not %s", name, describe(v))
			return
		}
		if df, ok := rv.Addr().Interface().(defaulter); ok {
			df.setDefaults()
		}
		d.table(path, m, rv)
	case reflect.Slice:
		var items []any
		switch l := v.(type) {
		case []any:
			items = l
		case []map[string]any: // [[array.of.tables]]
			items = make([]any, len(l))
			for i := range l {
				items[i] = l[i]
			}
		case string:
			if rv.Type() != expressionsType {
				d.probs.at(path, "%s must be a list, not %s", name, describe(v))
				return
			}
			// deny_when = "…" is the common case of one condition.
			items = []any{l}
		default:
			d.probs.at(path, "%s must be a list, not %s", name, describe(v))
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(items), len(items))
		for i, it := range items {
			d.value(sub(path, strconv.Itoa(i)), it, s.Index(i))
		}
		rv.Set(s)
	case reflect.Map: // string → string (on_trigger)
		m, ok := v.(map[string]any)
		if !ok {
			d.probs.at(path, "%s must be a table, not %s", name, describe(v))
			return
		}
		out := reflect.MakeMapWithSize(rv.Type(), len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			elem := reflect.New(rv.Type().Elem()).Elem()
			d.value(sub(path, k), m[k], elem)
			out.SetMapIndex(reflect.ValueOf(k), elem)
		}
		rv.Set(out)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.probs.at(path, "%s must be a string, not %s", name, describe(v))
			return
		}
		rv.SetString(s)
	case reflect.Int, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			d.probs.at(path, "%s must be a whole number, not %s", name, describe(v))
			return
		}
		if rv.OverflowInt(n) {
			d.probs.at(path, "%s = %d is too large", name, n)
			return
		}
		rv.SetInt(n)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.probs.at(path, "%s must be true or false, not %s", name, describe(v))
			return
		}
		rv.SetBool(b)
	default:
		// A field type in types.go that this decoder does not handle.
		panic(fmt.Sprintf("policy: cannot decode into %s", rv.Type()))
	}
}

// table copies the keys of one TOML table into the fields of a struct.
func (d *decoder) table(path []string, m map[string]any, rv reflect.Value) {
	fields := d.fieldsOf(rv.Type())
	for _, k := range slices.Sorted(maps.Keys(m)) {
		i, ok := fields[k]
		if !ok {
			where := ""
			if len(path) > 0 {
				where = " in " + display(path)
			}
			d.probs.at(sub(path, k), "unknown key %q%s%s", k, where, suggest(k, fields))
			continue
		}
		d.value(sub(path, k), m[k], rv.Field(i))
	}
}

func (d *decoder) fieldsOf(t reflect.Type) map[string]int {
	if f, ok := d.fields[t]; ok {
		return f
	}
	f := map[string]int{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if tag := sf.Tag.Get("toml"); sf.IsExported() && tag != "" && tag != "-" {
			f[tag] = i
		}
	}
	if d.fields == nil {
		d.fields = map[reflect.Type]map[string]int{}
	}
	d.fields[t] = f
	return f
}

// display names a table the way the file writes it: grants.approval, not
// grants.0.approval.
func display(path []string) string {
	var parts []string
	for _, p := range path {
		if _, err := strconv.Atoi(p); err != nil {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ".")
}

// suggest offers the known key closest to a misspelt one.
func suggest(k string, fields map[string]int) string {
	// Within two edits, and not more edits than half the key: "x" is not a
	// misspelling of "id".
	best, bestDist := "", min(3, len(k)/2+1)
	for f := range fields {
		if strings.EqualFold(f, k) {
			return fmt.Sprintf(" (keys are case-sensitive: did you mean %q?)", f)
		}
		if dist := editDistance(k, f); dist < bestDist || dist == bestDist && f < best {
			best, bestDist = f, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance, on bytes; keys are ASCII.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // no suggestion for absurd keys, and no quadratic cost
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe names a TOML value's type in plain words.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case int64:
		return fmt.Sprintf("the number %d", v)
	case float64:
		return "a fractional number"
	case bool:
		return fmt.Sprintf("%t", v)
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "a list"
	case time.Time:
		return "a date or time"
	}
	return fmt.Sprintf("a %T", v)
}

// clip shortens a message that quotes user input; the TOML parser quotes
// whole keys, which can be long.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
