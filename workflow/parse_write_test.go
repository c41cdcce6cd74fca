package workflow

import (
	"io/fs"
	"strings"
	"testing"
)

func TestWriteFileStep(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- name: save
  write_file:
    path: out/${ID}.json
    content: '{"id": "${ID}"}'
    format: json
    mode: "0600"
    create_dirs: true
- write_file: {path: notes.txt, content: ""}
`))
	if err != nil {
		t.Fatal(err)
	}
	save, notes := wf.Steps[0], wf.Steps[1]
	if save.Command.Kind != WriteFileCommand || save.Command.Text.String() != "out/${ID}.json" {
		t.Errorf("command = %s %q", save.Command.Kind, save.Command.Text)
	}
	w := save.Command.Write
	if w.Content.String() != `{"id": "${ID}"}` || w.Format != WriteJSON || w.Mode != 0o600 || !w.CreateDirs {
		t.Errorf("write_file = %+v", w)
	}
	if got := save.Command.Refs(); strings.Join(got, " ") != "ID ID" {
		t.Errorf("refs = %q, want the path's and the content's", got)
	}
	if nw := notes.Command.Write; nw.Format != WriteText || nw.Mode != fs.FileMode(0o644) || nw.CreateDirs {
		t.Errorf("defaults = %+v, want text, 0644, no create_dirs", nw)
	}
	if notes.Command.source() != "write_file notes.txt" {
		t.Errorf("source %q", notes.Command.source())
	}
}

func TestWriteFileErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"- write_file: {path: a}\n", `1:15: write_file needs content`},
		{"- write_file: {path: '', content: x}\n", `1:22: write_file.path is empty`},
		{"- write_file: {path: a, content: x, format: xml}\n", `1:45: write_file.format must be one of text, json, yaml, not "xml"`},
		{"- write_file: {path: a, content: x, mode: '0999'}\n", `1:43: write_file.mode must be octal permissions from 0000 to 0777`},
		{"- write_file: {path: a, content: x, mode: '01777'}\n", `1:43: write_file.mode must be octal permissions`},
		{"- write_file: {path: a, content: x, encoding: utf8}\n", `1:37: unknown key "encoding" in write_file`},
		{"- write_file: {path: a, content: [x]}\n", `1:34: write_file.content must be a string, not a list`},
		{"- write_file: {path: a, content: '{\"a\": }', format: json}\n", `1:34: write_file.content is not valid JSON: invalid character '}'`},
		{"- write_file: {path: a, content: 'a: [', format: yaml}\n", `1:34: write_file.content is not valid YAML`},
		{"- write_file: {path: a, content: x}\n  claude: /fix\n", `2:3: a step runs one command: write_file or claude, not both`},
		{"- write_file: {path: a, content: x}\n  capture_output: true\n", `2:3: write_file runs no command, so it has no output to capture`},
		{"- write_file: a.txt\n", `1:15: write_file must be a mapping, not "a.txt"`},
	} {
		errs := parseErr(t, "w.yml", tt.src)
		if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
			t.Errorf("%q: want an error containing\n  %s\ngot\n  %s", tt.src, tt.want, strings.Join(errs, "\n  "))
		}
		if len(errs) != 1 {
			t.Errorf("%q: want one error, got\n  %s", tt.src, strings.Join(errs, "\n  "))
		}
	}
}

func TestWriteFileRender(t *testing.T) {
	for _, tt := range []struct {
		format  WriteFormat
		content string
		want    string
	}{
		{WriteText, "as $it is\n", "as $it is\n"},
		{WriteJSON, `{"b":1,"a":[1.50,2e3]}`, "{\n  \"b\": 1,\n  \"a\": [\n    1.50,\n    2e3\n  ]\n}\n"},
		{WriteYAML, "a:    1  # one\nb:\n    - x\n", "a: 1 # one\nb:\n  - x\n"},
		{WriteYAML, "a: 1\n---\nb: 2\n", "a: 1\n---\nb: 2\n"},
	} {
		got, err := (&WriteFile{Format: tt.format}).Render(tt.content)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s %q = %q, %v; want %q", tt.format, tt.content, got, err, tt.want)
		}
	}
	for _, tt := range []struct {
		format  WriteFormat
		content string
	}{{WriteJSON, `{"a": 1} {"b": 2}`}, {WriteJSON, ""}, {WriteYAML, "a: [1,"}, {WriteYAML, "\tx: 1\n"}} {
		if got, err := (&WriteFile{Format: tt.format}).Render(tt.content); err == nil {
			t.Errorf("%s %q = %q, want an error", tt.format, tt.content, got)
		}
	}
}
