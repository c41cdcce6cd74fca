package interp

import (
	"encoding/json"
	"math"
	"testing"
)

func TestToText(t *testing.T) {
	type named string
	tests := []struct {
		name   string
		v      any
		asJSON bool
		want   string
	}{
		{name: "string", v: "a b", want: "a b"},
		{name: "named string", v: named("x"), want: "x"},
		{name: "nil", v: nil, want: ""},
		{name: "nil as json", v: nil, asJSON: true, want: "null"},
		{name: "bool", v: false, want: "false"},
		{name: "int", v: -12, want: "-12"},
		{name: "int64", v: int64(math.MaxInt64), want: "9223372036854775807"},
		{name: "uint8", v: uint8(200), want: "200"},
		{name: "integral float", v: 3.0, want: "3"},
		{name: "negative zero", v: math.Copysign(0, -1), want: "0"},
		{name: "float", v: 0.1, want: "0.1"},
		{name: "float32", v: float32(0.1), want: "0.1"},
		{name: "large integral float", v: 1e15, want: "1000000000000000"},
		{name: "float beyond int64", v: 1e19, want: "1e+19"},
		{name: "NaN", v: math.NaN(), want: "NaN"},
		{name: "json.Number", v: json.Number("1.50"), want: "1.50"},
		{name: "slice", v: []any{1, "a", nil}, want: `[1,"a",null]`},
		{name: "strings", v: []any{"a b", "c"}, want: "a b, c"},
		{name: "typed strings", v: []string{"x", "y"}, want: "x, y"},
		{name: "empty list", v: []any{}, want: ""},
		{name: "nested list", v: []any{"a", []any{"b"}}, want: `["a",["b"]]`},
		{name: "strings as json", v: []any{"a", "b"}, asJSON: true, want: `["a","b"]`},
		{name: "JSONList", v: JSONList{"abc", "def"}, want: `["abc","def"]`},
		{name: "empty JSONList", v: JSONList{}, want: `[]`},
		{name: "map keys sorted", v: map[string]any{"b": 1, "a": map[string]any{"<": "&"}}, want: `{"a":{"<":"&"},"b":1}`},
		{name: "string as json", v: "it's \"q\"", asJSON: true, want: `"it's \"q\""`},
		{name: "float as json", v: 3.0, asJSON: true, want: "3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := toText(tc.v, tc.asJSON)
			if err != nil || got != tc.want {
				t.Fatalf("toText(%#v, %t) = %q, %v; want %q", tc.v, tc.asJSON, got, err, tc.want)
			}
		})
	}
}

func TestMapLookup(t *testing.T) {
	look := MapLookup(map[string]any{
		"REGION": "eu",
		"item": map[string]any{
			"tags":   []any{"a", []any{"b0", "b1"}},
			"labels": map[string]string{"k": "v"},
			"list":   []string{"s0"},
			"nil":    nil,
		},
	})
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"REGION", "eu", true},
		{"item.tags[0]", "a", true},
		{"item.tags[1][1]", "b1", true},
		{"item.labels.k", "v", true},
		{"item.list[0]", "s0", true},
		{"item.nil", nil, true},
		{"item.tags[2]", nil, false},
		{"item.tags.x", nil, false},
		{"REGION.x", nil, false},
		{"REGION[0]", nil, false},
		{"item.nil.x", nil, false},
		{"nope", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := look(tc.path)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %v, %t; want %v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
	if v, ok := look("item"); !ok || v == nil {
		t.Errorf("item: got %v, %t", v, ok)
	}
	if _, ok := MapLookup(nil)("x"); ok {
		t.Error("MapLookup(nil) found x")
	}
}
