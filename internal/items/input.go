package items

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/theory/jsonpath"

	"github.com/runnerdev/runner/internal/jsonvalue"
)

// errStop ends reading the input early (max_items reached).
var errStop = errors.New("enough items")

// emitFunc receives one selected item as JSON and its decoded value.
type emitFunc func(raw json.RawMessage, value any) error

// readInput reads items from r: a JSON document (array; object with
// json_path; or, without, one object that is the one item), JSON Lines,
// or plain lines (each non-empty line a string).
// A JSON array, and an object whose json_path is a plain chain of names
// ending in [*], are streamed element by element; other JSONPath queries
// need the document in memory.
func readInput(r io.Reader, path string, emit emitFunc) error {
	br := bufio.NewReaderSize(r, 256<<10)
	first, err := firstByte(br)
	if errors.Is(err, io.EOF) {
		return nil // no items
	}
	if err != nil {
		return err
	}
	if path == "$" {
		path = ""
	}
	switch first {
	case '[':
		return readDocument(json.NewDecoder(br), path, emit)
	case '{':
		lines, err := isJSONLines(br)
		if err != nil {
			return err
		}
		if lines {
			return readJSONLines(br, path, emit)
		}
		if path == "" {
			return readObject(json.NewDecoder(br), emit)
		}
		return readDocument(json.NewDecoder(br), path, emit)
	}
	if path != "" {
		return fmt.Errorf("json_path %s needs JSON input, but the input starts with %q (plain lines)", path, first)
	}
	return readLines(br, emit)
}

// firstByte returns the first byte that is not white space (or a UTF-8
// byte order mark), leaving it unread.
func firstByte(br *bufio.Reader) (byte, error) {
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if !isSpace(b) {
			return b, br.UnreadByte()
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// isJSONLines reports whether input starting with '{' holds one JSON value
// per line: its first line is a complete value and something follows it.
func isJSONLines(br *bufio.Reader) (bool, error) {
	buf, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return false, err
	}
	line, rest, found := bytes.Cut(buf, []byte("\n"))
	if !found || !json.Valid(line) {
		return false, nil
	}
	return len(bytes.TrimSpace(rest)) > 0, nil
}

// readObject reads a document that is one JSON object, without json_path:
// as in Prodigy, the object is the one item.
func readObject(dec *json.Decoder, emit emitFunc) error {
	if err := emitNext(dec, emit); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON input: more than one top-level value (for JSON Lines, put one value on each line)")
	}
	return nil
}

// readDocument reads one JSON document.
func readDocument(dec *json.Decoder, path string, emit emitFunc) error {
	dec.UseNumber()
	if names, ok := streamablePath(path); ok {
		if err := streamAt(dec, names, emit); err != nil {
			return err
		}
	} else {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return syntaxError(err)
		}
		if err := selectAll(doc, path, emit); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON input: more than one top-level value (for JSON Lines, put one value on each line)")
	}
	return nil
}

// simplePath is a JSONPath of plain member names ending in [*].
var simplePath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$((?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\[\*\]|\.\*)$`) })

// streamablePath returns the member names leading to the array (or
// object) whose elements are the items; "" and "$[*]" lead to the root.
func streamablePath(path string) ([]string, bool) {
	if path == "" {
		return nil, true
	}
	m := simplePath().FindStringSubmatch(path)
	if m == nil {
		return nil, false
	}
	if m[1] == "" {
		return nil, true
	}
	return strings.Split(m[1][1:], "."), true
}

// streamAt walks down names and emits the elements of the value found
// there; an empty path at the root of a non-array emits the value itself.
// The rest of the document is read and discarded.
func streamAt(dec *json.Decoder, names []string, emit emitFunc) error {
	depth := 0 // containers opened and not yet closed
	for _, name := range names {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		if tok == json.Delim('[') {
			depth++
		}
		if tok != json.Delim('{') {
			return skipRest(dec, depth) // not an object: no such member, no items
		}
		depth++
		if !findMember(dec, name) {
			return skipRest(dec, depth) // no such member: no items
		}
	}
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			if err := emitNext(dec, emit); err != nil {
				return err
			}
		}
	case json.Delim('{'):
		if len(names) == 0 {
			return errors.New("the input is a JSON object: set json_path to the array of items, such as $.items[*]")
		}
		for dec.More() {
			if _, err := dec.Token(); err != nil { // member name
				return syntaxError(err)
			}
			if err := emitNext(dec, emit); err != nil {
				return err
			}
		}
	default:
		if len(names) == 0 {
			return errors.New("the input is a single JSON value, not an array of items")
		}
		return skipRest(dec, depth) // a scalar has no elements
	}
	if _, err := dec.Token(); err != nil { // the closing ] or }
		return syntaxError(err)
	}
	return skipRest(dec, depth)
}

// findMember reads members of the current object until name, leaving its
// value next; false when the object ends without it.
func findMember(dec *json.Decoder, name string) bool {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if tok == name {
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// skipRest reads to the end of depth open containers.
func skipRest(dec *json.Decoder, depth int) error {
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// emitNext decodes the next value and emits it.
func emitNext(dec *json.Decoder, emit emitFunc) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return syntaxError(err)
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return syntaxError(err)
	}
	return emit(raw, v)
}

// selectAll applies a JSONPath query to a decoded document.
func selectAll(doc any, path string, emit emitFunc) error {
	if path == "" {
		arr, ok := doc.([]any)
		if !ok {
			return errors.New("the input is not a JSON array: set json_path to select the items")
		}
		return emitValues(arr, emit)
	}
	p, err := jsonpath.Parse(path)
	if err != nil {
		return fmt.Errorf("json_path: %w", err)
	}
	return emitValues(p.Select(doc), emit)
}

func emitValues(values []any, emit emitFunc) error {
	for _, v := range values {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		nv, err := jsonvalue.Decode(raw)
		if err != nil {
			return err
		}
		if err := emit(raw, nv); err != nil {
			return err
		}
	}
	return nil
}

// readJSONLines reads one JSON value per non-blank line; with a path, the
// query selects the items of each line.
func readJSONLines(br *bufio.Reader, path string, emit emitFunc) error {
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if path == "" {
				v, derr := jsonvalue.Decode(line)
				if derr != nil {
					return fmt.Errorf("invalid JSON Lines input, line %d: %w", n, derr)
				}
				if err := emit(json.RawMessage(bytes.TrimSpace(line)), v); err != nil {
					return err
				}
			} else {
				dec := json.NewDecoder(bytes.NewReader(line))
				dec.UseNumber()
				var doc any
				if derr := dec.Decode(&doc); derr != nil {
					return fmt.Errorf("invalid JSON Lines input, line %d: %w", n, derr)
				}
				p, perr := jsonpath.Parse(path)
				if perr != nil {
					return fmt.Errorf("json_path: %w", perr)
				}
				if err := emitValues(p.Select(doc), emit); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLines emits each non-empty line as a string item, byte for byte:
// bytes outside UTF-8 are kept (see jsonvalue.EncodeString).
func readLines(br *bufio.Reader, emit emitFunc) error {
	for {
		line, err := br.ReadString('\n')
		if text := strings.TrimRight(line, "\r\n"); text != "" {
			if err := emit(jsonvalue.EncodeString(text), text); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// syntaxError words a JSON decoding error for the input.
func syntaxError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON input: it ends in the middle of a value")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON input at byte %d: %v", se.Offset, se)
	}
	return fmt.Errorf("invalid JSON input: %w", err)
}
