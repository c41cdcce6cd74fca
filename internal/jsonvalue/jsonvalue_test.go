package jsonvalue

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Strings outside UTF-8 survive a JSON round trip byte for byte; valid
// text encodes exactly as json.Marshal does.
func TestEncodeStringRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain.txt", `"plain.txt"`},
		{"café <&>", `"café \u003c\u0026\u003e"`},
		{"caf\xe9.txt", `"caf\udce9.txt"`},
		{"\xff\xfe", `"\udcff\udcfe"`},
		{"💀\xe9\"q\"\n", `"💀\udce9\"q\"\n"`},
		{"\xc3", `"\udcc3"`},        // a cut sequence
		{"\ufffd\x80", `"�\udc80"`}, // a real U+FFFD stays one
		{"\xed\xb3\xa9", `"\udced\udcb3\udca9"`},
	} {
		got := EncodeString(tc.in)
		if string(got) != tc.want {
			t.Errorf("EncodeString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("EncodeString(%q) = %s is not valid JSON", tc.in, got)
		}
		back, err := Decode(got)
		if err != nil || back != tc.in {
			t.Errorf("Decode(%s) = %q, %v; want %q", got, back, err, tc.in)
		}
	}
}

// Byte escapes decode anywhere in a value; everything else decodes as
// encoding/json does it.
func TestDecodeByteEscapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`{"n":1,"f":1.5,"a":["caf\udce9",null,true],"k\udce9":{}}`,
			map[string]any{"n": int64(1), "f": 1.5, "a": []any{"caf\xe9", nil, true}, "k\xe9": map[string]any{}}},
		{`"\ud83d\udc80"`, "💀"},                      // a pair, not a byte
		{`"\\udce9"`, `\udce9`},                      // an escaped backslash
		{`"\ud83d\udce9\udc41"`, "\U0001f4e9\ufffd"}, // a pair, then a lone surrogate outside the byte range
		{`"\udce9\/\t\u00e9"`, "\xe9/\té"},
		{`["\udce9"] trailing`, []any{"\xe9"}},
	} {
		got, err := Decode([]byte(tc.in))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	if _, err := Decode([]byte(`{"a":"\udce9"`)); err == nil {
		t.Error("Decode of a cut document: no error")
	}
}
