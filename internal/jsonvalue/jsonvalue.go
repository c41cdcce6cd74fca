package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Text that is not valid UTF-8 (a plain-line item such as a file name in
// Latin-1) keeps its bytes in JSON the way Python's "surrogateescape" does
// (PEP 383): each byte 0x80-0xff that is not part of a valid UTF-8 sequence
// is written as the escape of a lone low surrogate, \udc80-\udcff, which no
// valid text contains. Decode turns such an escape back into the byte.

// EncodeString returns s as a JSON string. Valid UTF-8 encodes as
// json.Marshal does; any other byte becomes \udc80-\udcff.
func EncodeString(s string) json.RawMessage {
	if utf8.ValidString(s) {
		b, _ := json.Marshal(s)
		return b
	}
	out := []byte{'"'}
	for s != "" {
		n := validPrefix(s)
		seg, _ := json.Marshal(s[:n])
		out = append(out, seg[1:len(seg)-1]...)
		if n < len(s) {
			out = fmt.Appendf(out, `\udc%02x`, s[n])
			n++
		}
		s = s[n:]
	}
	return append(out, '"')
}

// validPrefix is the length of the longest valid UTF-8 prefix of s.
func validPrefix(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(s)
}

// hasByteEscape reports whether data may hold a \udc.. escape: only then
// does Decode read its strings itself (see nextValue).
func hasByteEscape(data []byte) bool {
	for rest := data; ; {
		i := bytes.Index(rest, []byte(`\u`))
		if i < 0 || i+4 > len(rest) {
			return false
		}
		if (rest[i+2]|0x20) == 'd' && (rest[i+3]|0x20) == 'c' {
			return true
		}
		rest = rest[i+2:]
	}
}

// nextValue decodes the next value from dec like Decode with UseNumber,
// except that strings keep the bytes their \udc80-\udcff escapes stand
// for; data is dec's whole input.
func nextValue(dec *json.Decoder, data []byte) (any, error) {
	from := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := nextValue(dec, data)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			k, err := nextValue(dec, data)
			if err != nil {
				return nil, err
			}
			v, err := nextValue(dec, data)
			if err != nil {
				return nil, err
			}
			obj[k.(string)] = v
		}
		_, err := dec.Token()
		return obj, err
	}
	if s, ok := tok.(string); ok {
		// The literal is the token's text after any separators.
		span := data[from:dec.InputOffset()]
		if exact, ok := unquote(span[bytes.IndexByte(span, '"'):]); ok {
			return exact, nil
		}
		return s, nil
	}
	return tok, nil
}

// unquote decodes a JSON string literal as encoding/json does (invalid
// UTF-8 and lone surrogates become U+FFFD), except that an escape
// \udc80-\udcff that is not the second half of a pair becomes its byte.
func unquote(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	lit = lit[1 : len(lit)-1]
	out := make([]byte, 0, len(lit))
	for i := 0; i < len(lit); {
		c := lit[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(lit[i:])
			out = utf8.AppendRune(out, r) // RuneError for a byte outside UTF-8
			i += size
			continue
		}
		if i+1 == len(lit) {
			return "", false
		}
		if e, ok := simpleEscapes[lit[i+1]]; ok {
			out = append(out, e)
			i += 2
			continue
		}
		r, ok := hex4(lit, i)
		if !ok {
			return "", false
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if lo, ok := hex4(lit, i); ok && r < 0xdc00 && lo >= 0xdc00 && lo <= 0xdfff {
			out = utf8.AppendRune(out, utf16.DecodeRune(r, lo))
			i += 6
		} else if r >= 0xdc80 && r <= 0xdcff {
			out = append(out, byte(r-0xdc00))
		} else {
			out = utf8.AppendRune(out, utf8.RuneError)
		}
	}
	return string(out), true
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the escape \uXXXX at lit[i:].
func hex4(lit []byte, i int) (rune, bool) {
	if i+6 > len(lit) || lit[i] != '\\' || lit[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(lit[i+2:i+6]), 16, 32)
	return rune(n), err == nil
}

// Decode decodes one JSON value with integers as int64 and other
// numbers as float64, as expressions and interpolation expect them, and
// strings with the bytes their \udc80-\udcff escapes stand for (see
// EncodeString).
func Decode(data []byte) (any, error) {
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
// compare them naturally. It changes v's maps and slices in place: give it
// a Copy of a value others hold.
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

// Copy returns a deep copy of a decoded JSON value: its maps and slices
// are new, so that changing the copy leaves v as it was.
func Copy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Copy(e)
		}
		return out
	}
	return v
}
