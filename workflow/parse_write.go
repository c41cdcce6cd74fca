package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// WriteFileCommand is Prodigy's write_file step: runner writes the file
// itself, with no shell and no process, so values go in as they are.
const WriteFileCommand CommandKind = "write_file"

// WriteFormat is write_file's format: how the content is checked and laid
// out before it is written.
type WriteFormat string

// The write_file formats.
const (
	WriteText WriteFormat = "text" // written as it is
	WriteJSON WriteFormat = "json" // checked, pretty-printed with two-space indents
	WriteYAML WriteFormat = "yaml" // checked, laid out again with two-space indents
)

// WriteFile is what a write_file step writes, besides its path (the
// command's Text).
type WriteFile struct {
	Content    *interp.Template
	Format     WriteFormat
	Mode       fs.FileMode // permission bits the file ends with
	CreateDirs bool        // make missing parent directories
}

var writeFileKeys = []string{"path", "content", "format", "mode", "create_dirs"}

// defaultWriteMode is write_file's mode when the file gives none, as in
// Prodigy.
const defaultWriteMode fs.FileMode = 0o644

// writeFile reads a step's write_file: {path, content, format, mode,
// create_dirs}.
func (d *decoder) writeFile(f *fields) Command {
	cmd := Command{Kind: WriteFileCommand}
	for _, other := range []string{"shell", "claude"} {
		if f.has(other) {
			d.errorf(f.key(other), "a step runs one command: write_file or %s, not both", other)
		}
	}
	if f.has("capture_output") {
		d.errorf(f.key("capture_output"), "write_file runs no command, so it has no output to capture")
	}
	w := d.mapping(f.get("write_file"), "write_file", writeFileKeys)
	if w == nil {
		return cmd
	}
	wf := &WriteFile{Format: WriteText, Mode: defaultWriteMode}
	cmd.Write = wf
	if n := w.get("path"); n != nil {
		if text, ok := d.str(n, "write_file.path"); ok && text != "" {
			cmd.Text = d.template(n, "write_file.path", text)
		} else if ok {
			d.errorf(n, "write_file.path is empty: name the file to write")
		}
	} else {
		d.errorf(w.node, "write_file needs path: the file to write")
	}
	if n := w.get("format"); n != nil {
		v, _ := d.enum(n, "write_file.format", string(WriteText), string(WriteJSON), string(WriteYAML))
		wf.Format = WriteFormat(v)
	}
	if n := w.get("content"); n != nil {
		if text, ok := d.str(n, "write_file.content"); ok {
			wf.Content = d.template(n, "write_file.content", text)
			d.checkLiteralContent(n, wf)
		}
	} else {
		d.errorf(w.node, "write_file needs content: the text to write (it may be empty: content: \"\")")
	}
	if n := w.get("mode"); n != nil {
		wf.Mode = d.fileMode(n)
	}
	if n := w.get("create_dirs"); n != nil {
		wf.CreateDirs, _ = d.boolean(n, "write_file.create_dirs")
	}
	return cmd
}

// checkLiteralContent checks json or yaml content that holds no
// placeholder now, at its line, rather than when the step runs.
func (d *decoder) checkLiteralContent(n *yaml.Node, wf *WriteFile) {
	if wf.Content == nil || len(wf.Content.Refs()) > 0 || wf.Format == WriteText || wf.Format == "" {
		return
	}
	if _, err := wf.Render(wf.Content.String()); err != nil {
		d.errorf(n, "write_file.%v", err)
	}
}

// fileMode reads an octal permission string such as "0644" (an unquoted
// 0644 is read as the same digits).
func (d *decoder) fileMode(n *yaml.Node) fs.FileMode {
	s, ok := d.str(n, "write_file.mode")
	if !ok {
		return defaultWriteMode
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		d.errorf(n, "write_file.mode must be octal permissions from 0000 to 0777, such as \"0644\", not %q", s)
		return defaultWriteMode
	}
	return fs.FileMode(v)
}

// Render checks content against the format and lays it out as the file
// will hold it.
func (w *WriteFile) Render(content string) ([]byte, error) {
	switch w.Format {
	case WriteJSON:
		return prettyJSON(content)
	case WriteYAML:
		return prettyYAML(content)
	}
	return []byte(content), nil
}

// prettyJSON checks one JSON value and indents it by two spaces, keeping
// its keys' order and its numbers' digits.
func prettyJSON(content string) ([]byte, error) {
	var v any
	if err := json.Unmarshal([]byte(content), &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("content is not valid JSON: %v (at byte %d of %d)", syn, syn.Offset, len(content))
		}
		return nil, fmt.Errorf("content is not valid JSON: %v", err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(content), "", "  "); err != nil {
		return nil, fmt.Errorf("content is not valid JSON: %v", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// prettyYAML checks YAML documents and writes them again with two-space
// indents, comments kept. yaml.v3 panics on some malformed input; that is
// an invalid content too, not the end of the job.
func prettyYAML(content string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("content is not valid YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(content)))
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("content is not valid YAML: %v", err)
		}
		if err := enc.Encode(&doc); err != nil {
			return nil, fmt.Errorf("content is not valid YAML: %v", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
