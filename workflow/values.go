package workflow

import (
	"bytes"
	"encoding/json"
)

// DecodeValue decodes one JSON value with integers as int64 and other
// numbers as float64, as expressions and interpolation expect them, and
// strings with the bytes their \udc80-\udcff escapes stand for (see
// EncodeString).
func DecodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	var err error
	if hasByteEscape(data) {
		v, err = nextValue(dec, data)
	} else {
		err = dec.Decode(&v)
	}
	if err != nil {
		return nil, err
	}
	return NormalizeNumbers(v), nil
}

// NormalizeNumbers turns json.Number into int64 or float64 so expressions
// compare them naturally.
func NormalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = NormalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = NormalizeNumbers(e)
		}
	}
	return v
}

// Abbreviate shortens s to at most 40 bytes, for messages.
func Abbreviate(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
