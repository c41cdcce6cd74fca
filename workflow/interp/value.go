package interp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// MapLookup walks nested map[string]any / []any values (keys by ".",
// indexes by "[N]"). Other map and slice types are walked the same way.
func MapLookup(vars map[string]any) Lookup {
	return func(path string) (any, bool) {
		var cur any = vars
		for path != "" {
			var ok bool
			switch path[0] {
			case '.':
				path = path[1:]
				continue
			case '[':
				end := strings.IndexByte(path, ']')
				if end < 0 {
					return nil, false
				}
				n, err := strconv.Atoi(path[1:end])
				if err != nil {
					return nil, false
				}
				cur, ok = index(cur, n)
				path = path[end+1:]
			default:
				end := strings.IndexAny(path, ".[")
				if end < 0 {
					end = len(path)
				}
				cur, ok = field(cur, path[:end])
				path = path[end:]
			}
			if !ok {
				return nil, false
			}
		}
		return cur, true
	}
}

// field returns m[key] when m is a map with string keys.
func field(m any, key string) (any, bool) {
	if m, ok := m.(map[string]any); ok {
		v, ok := m[key]
		return v, ok
	}
	rv := reflect.ValueOf(m)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	v := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
	if !v.IsValid() {
		return nil, false
	}
	return v.Interface(), true
}

// index returns s[n] when s is a slice or array.
func index(s any, n int) (any, bool) {
	rv := reflect.ValueOf(s)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array || n < 0 || n >= rv.Len() {
		return nil, false
	}
	return rv.Index(n).Interface(), true
}

// Unavailable is a variable whose value runner did not keep (an output
// over its size limit, an output from before a resume): a placeholder that
// reads it fails with Reason rather than inserting a wrong text.
type Unavailable struct{ Reason string }

func (u Unavailable) Error() string { return u.Reason }

// JSONList is a list that a placeholder inserts as JSON even when it holds
// only strings: a step's commits (${steps.ID.commits}), documented as a
// JSON array of SHAs.
type JSONList []any

// toText converts a value to the text a placeholder inserts, or to its JSON
// encoding with asJSON. A list of strings is its strings joined by ", "
// (Prodigy's value_to_string); other lists and maps are JSON.
func toText(v any, asJSON bool) (string, error) {
	if u, ok := v.(Unavailable); ok {
		return "", u
	}
	if asJSON {
		return toJSON(v)
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case json.Number:
		return string(x), nil
	case JSONList:
		return toJSON([]any(x))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if words, ok := stringList(rv); ok {
			return strings.Join(words, ", "), nil
		}
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Float32:
		return formatFloat(rv.Float(), 32), nil
	case reflect.Float64:
		return formatFloat(rv.Float(), 64), nil
	}
	return toJSON(v)
}

// stringList returns the strings of a list that holds nothing else.
func stringList(rv reflect.Value) ([]string, bool) {
	words := make([]string, rv.Len())
	for i := range words {
		e := rv.Index(i)
		if e.Kind() == reflect.Interface {
			e = e.Elem()
		}
		if e.Kind() != reflect.String {
			return nil, false
		}
		words[i] = e.String()
	}
	return words, true
}

// formatFloat writes integral values that fit an int64 without a decimal
// point and others in the shortest 'g' form.
func formatFloat(f float64, bits int) string {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// toJSON returns the compact JSON encoding of v, without HTML escaping.
func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode value as json: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
