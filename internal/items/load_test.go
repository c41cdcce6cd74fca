package items

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/workflow"
)

// mapPhase parses a MapReduce workflow's map section for tests.
func mapPhase(t testing.TB, mapYAML string) *workflow.MapPhase {
	t.Helper()
	src := "mode: mapreduce\nmap:\n  input: x\n  agent_template: [{shell: 'true'}]\n" + mapYAML
	wf, err := workflow.Parse("t.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf.Map
}

// load runs the pipeline over input and returns the items file's items.
func load(t testing.TB, m *workflow.MapPhase, input io.Reader) ([]*Item, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.jsonl")
	n, err := Load(input, m, executor.NewScope(nil, nil), path)
	if err != nil {
		return nil, err
	}
	var got []*Item
	err = Read(path, func(it *Item) (bool, error) {
		got = append(got, it)
		return true, nil
	})
	if err == nil && len(got) != n {
		t.Fatalf("loadItems said %d items, file has %d", n, len(got))
	}
	return got, err
}

// ids returns the items' ids separated by spaces.
func ids(items []*Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.ID)
	}
	return strings.Join(s, " ")
}

func TestInputFormats(t *testing.T) {
	tests := []struct {
		name, mapYAML, input, want string
	}{
		{"array", "", `[1, "two", {"a": 3}]`, `1=1 two="two" item_2={"a":3}`},
		{"array $[*]", `  json_path: "$[*]"`, `[1,2]`, `1=1 2=2`},
		{"object path streamed", `  json_path: "$.items[*]"`, `{"meta": {"n": [1]}, "items": [{"id": "a"}, {"id": "b"}], "after": 1}`, `item_0={"id":"a"} item_1={"id":"b"}`},
		{"nested path", `  json_path: "$.data.items[*]"`, `{"data": {"items": ["x"]}}`, `x="x"`},
		{"object members", `  json_path: "$.m.*"`, `{"m": {"k1": 1, "k2": 2}}`, `1=1 2=2`},
		{"missing member", `  json_path: "$.nope[*]"`, `{"items": [1]}`, ``},
		{"filter query", `  json_path: "$.items[?@.size > 1].name"`, `{"items": [{"name": "a", "size": 1}, {"name": "b", "size": 2}]}`, `b="b"`},
		{"json lines", "", "{\"a\": 1}\n\n{\"a\": 2}\n", `item_0={"a":1} item_1={"a":2}`},
		{"one object without path is one item", "", "{\"items\": [1],\n \"n\": 2}\n", `item_0={"items":[1],"n":2}`},
		{"json lines with path", `  json_path: "$.xs[*]"`, "{\"xs\": [1, 2]}\n{\"xs\": [3]}\n", `1=1 2=2 3=3`},
		{"plain lines", "", "src/a.rs\r\n\nsrc/b c.rs\n", `src/a.rs="src/a.rs" item_1="src/b c.rs"`},
		{"plain lines outside UTF-8", "", "caf\xe9.txt\nna\xefve \xff\n", `item_0="caf\udce9.txt" item_1="na\udcefve \udcff"`},
		{"distinct keeps bytes apart", "  distinct: k", `[{"k":"\udce9"},{"k":"\udce8"},{"k":"\udce9"}]`, `item_0={"k":"\udce9"} item_1={"k":"\udce8"}`},
		{"empty", "", "  \n", ``},
		{"byte order mark", "", "\xef\xbb\xbf[1]", `1=1`},
		{"big numbers keep their text", "", `[12345678901234567890, 1.50]`, `12345678901234567890=12345678901234567890 1.50=1.50`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(t, mapPhase(t, tt.mapYAML), strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			var pairs []string
			for _, it := range got {
				pairs = append(pairs, it.ID+"="+string(it.Raw))
			}
			if s := strings.Join(pairs, " "); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// Without item_id a string or number item's id is its value when that is
// short, printable, quoting-free and not taken; else item_<index>.
func TestDefaultIDs(t *testing.T) {
	long := strings.Repeat("x", maxValueID)
	tests := []struct{ name, mapYAML, input, want string }{
		{"seq", "", "1\n2\n7\n", "1 2 7"},
		{"numbers as written", "", `[7, 1.50, 1e3, 12345678901234567890]`, "7 1.50 1e3 12345678901234567890"},
		{"file names", "", "src/a.go\n./b_c-d.txt\n/abs/x@v1.2+3,y:z=%20\n.hidden\ncafé.txt\ncafe\u0301\n", "src/a.go ./b_c-d.txt /abs/x@v1.2+3,y:z=%20 .hidden café.txt cafe\u0301"},
		{"a mark first", "", "\u0301a\n", "item_0"},
		{"repeated values: the later ones", "", "a\nb\na\na\n", "a b item_2 item_3"},
		{"a number and its string", "", `[7, "7"]`, "7 item_1"},
		{"index-like values never", "", "item_1\nitem_01\nitem_x\nitem_\nx\n", "item_0 item_1 item_x item_ x"},
		{"index-like value would meet an index id", "", "b c\nitem_0\n", "item_0 item_1"},
		{"white space", "", "a b\n a\nc\td\n", "item_0 item_1 item_2"},
		{"options and shell syntax", "", "-3\n-x\n=ls\n~/a\n$HOME\na;b\n'q'\n*\n#c\na=b\n", "item_0 item_1 item_2 item_3 item_4 item_5 item_6 item_7 item_8 a=b"},
		{"negative number", "", `[-1, 2]`, "item_0 2"},
		{"control characters", "", "[\"a\\u001b[31m\", \"b\\u0000\", \"c\\u200e\"]", "item_0 item_1 item_2"},
		{"not UTF-8", "", "caf\xe9\nok\n", "item_0 ok"},
		{"length bound", "", long + "\n" + long + "y\n", long + " item_1"},
		{"objects, arrays, booleans, null", "", `[{"a": 1}, [1], true, null, "s"]`, "item_0 item_1 item_2 item_3 s"},
		{"of the items kept", "  filter: item > 1\n  offset: 1\n  max_items: 2", `[3, 1, 5, 2, 4]`, "5 2"},
		{"item_id still wins", "  item_id: id-${item}", "a\nb\n", "id-a id-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(t, mapPhase(t, tt.mapYAML), strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	tests := []struct{ name, mapYAML, input, want string }{
		{"bad json", "", `[1, 2`, "invalid JSON input: it ends in the middle of a value"},
		{"bad json syntax", "", `[1, }`, "invalid JSON input at byte"},
		{"object members without a name", `  json_path: "$[*]"`, `{"items": [1]}`, "set json_path to the array of items"},
		{"object and more", "", `{"a": 1} [2]`, "more than one top-level value"},
		{"scalar document", `  json_path: "$[*]"`, "[1]\n[2]", "more than one top-level value"},
		{"path on plain lines", `  json_path: "$.items[*]"`, "a\nb\n", "json_path $.items[*] needs JSON input"},
		{"duplicate ids", `  item_id: "${item.id}"`, `[{"id": "a"}, {"id": "b"}, {"id": "a"}]`, `duplicate item id "a": items 0 and 2`},
		{"empty id", `  item_id: "${item.id:-}"`, `[{"x": 1}]`, `item 0: item_id "${item.id:-}" gives an empty id`},
		{"id outside UTF-8", `  item_id: "${item}"`, "ok\ncaf\xe9\n", `item 1: item_id "${item}" gives "caf\xe9", which is not UTF-8 text`},
		{"undefined id path", `  item_id: "${item.id}"`, `[{"x": 1}]`, `item 0: item_id: undefined variable "item.id"`},
		{"filter not boolean", `  filter: "size"`, `[{"size": 1}]`, `filter "size" on input value 1 gave int64, not a boolean`},
		{"filter on a missing field", `  filter: "item.size * 2 > 0"`, `[{"size": 1}, {"x": 1}]`, `filter "item.size * 2 > 0" on input value 2: invalid operation: <nil> * int`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, mapPhase(t, tt.mapYAML), strings.NewReader(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPipelineOrder(t *testing.T) {
	input := `[
		{"id": "a", "size": 3, "kind": "x"}, {"id": "b", "size": 0, "kind": "y"},
		{"id": "c", "size": 5, "kind": "x"}, {"id": "d", "kind": "z"},
		{"id": "e", "size": 4, "kind": "y"}, {"id": "f", "size": 5, "kind": "w"}
	]`
	tests := []struct{ name, mapYAML, want string }{
		{"filter with item. and bare fields", "  filter: \"(item.size ?? 0) > 0 && kind != 'w'\"\n  item_id: ${item.id}", "a c e"},
		{"a comparison with a missing field is false", "  filter: size > 0 AND kind != 'w'\n  item_id: ${item.id}", "a c e"},
		{"sort desc, nulls last by default, stable", "  sort_by: size DESC\n  item_id: ${item.id}", "c f e a b d"},
		{"sort asc nulls first", "  sort_by: item.size ASC NULLS FIRST\n  item_id: ${item.id}", "d b a e c f"},
		{"two keys", "  sort_by: kind, size DESC\n  item_id: ${item.id}", "f c a e b d"},
		{"distinct keeps the first", "  distinct: kind\n  item_id: ${item.id}", "a b d f"},
		{"sort then distinct", "  sort_by: size DESC\n  distinct: kind\n  item_id: ${item.id}", "c f e d"},
		{"offset and max_items last", "  sort_by: size\n  offset: 1\n  max_items: 3\n  item_id: ${item.id}", "a e c"},
		{"all stages", "  filter: (size ?? 0) > 0\n  sort_by: size DESC\n  distinct: kind\n  offset: 1\n  max_items: 1\n  item_id: ${item.id}", "f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(t, mapPhase(t, tt.mapYAML), strings.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(got); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

// max_items stops reading the input: a stream that would fail after the
// first items is never read that far.
func TestMaxItemsStopsReading(t *testing.T) {
	r := io.MultiReader(strings.NewReader("a\nb\nc\n"), failingReader{})
	got, err := load(t, mapPhase(t, "  max_items: 2"), r)
	if err != nil || len(got) != 2 {
		t.Errorf("got %v, %v", got, err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read past max_items") }

// FuzzReadInput: any input gives items or an error, never a panic, and
// every item's JSON decodes to the item's value (plain lines byte for byte).
func FuzzReadInput(f *testing.F) {
	for _, s := range []string{`[1, {"a": [2]}]`, `{"items": [{"x": 1}]}`, "{\"a\":1}\n{\"a\":2}\n", "line one\nline two\n", "caf\xe9\n\xff\xfe\n", "", "\xef\xbb\xbf[]", `{"items": [1, 2`, `[[[[[[[[]]]]]]]]`} {
		f.Add([]byte(s), "$.items[*]")
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"a": {"b": [1]}}`), "$..b[0]")
	f.Fuzz(func(t *testing.T, input []byte, path string) {
		if len(path) > 100 {
			return
		}
		_ = readInput(strings.NewReader(string(input)), path, func(raw json.RawMessage, v any) error {
			back, err := jsonvalue.Decode(raw)
			if err != nil {
				t.Fatalf("emitted invalid JSON %q: %v", raw, err)
			}
			if !reflect.DeepEqual(back, v) {
				t.Fatalf("item %q decodes to %#v, not its value %#v", raw, back, v)
			}
			return nil
		})
	})
}

// BenchmarkLoadItems loads 10,000 JSON Lines items with custom ids.
func BenchmarkLoadItems(b *testing.B) {
	var input strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&input, `{"id": "item-%d", "path": "/data/photo-%07d.jpg", "size": %d}`+"\n", i, i, i*7)
	}
	m := mapPhase(b, "  item_id: ${item.id}")
	path := filepath.Join(b.TempDir(), "items.jsonl")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(strings.NewReader(input.String()), m, executor.NewScope(nil, nil), path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/item")
}

// FuzzDefaultIDs: default ids are unique, and each is item_<index> or
// 1-64 bytes of UTF-8 without white space or control characters.
func FuzzDefaultIDs(f *testing.F) {
	for _, s := range []string{"1\n2\n1\n", "a\nitem_1\nb c\n", `[7, "7", -1, {"a": 1}, "x"]`, "caf\xe9\n-n\n=ls\n\u0301a\n"} {
		f.Add([]byte(s))
	}
	m := mapPhase(f, "")
	f.Fuzz(func(t *testing.T, input []byte) {
		items, err := load(t, m, strings.NewReader(string(input)))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, it := range items {
			if seen[it.ID] {
				t.Fatalf("duplicate id %q", it.ID)
			}
			seen[it.ID] = true
			if it.ID == fmt.Sprintf("item_%d", it.Index) {
				continue
			}
			if len(it.ID) > maxValueID || !utf8.ValidString(it.ID) || strings.ContainsFunc(it.ID, func(r rune) bool {
				return unicode.IsSpace(r) || unicode.IsControl(r)
			}) {
				t.Fatalf("item %d has id %q", it.Index, it.ID)
			}
		}
	})
}
