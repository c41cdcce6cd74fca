package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// decoder reads lines of the log into events. It gives what encoding/json
// gives for a line decoded into a map[string]any with UseNumber (numbers
// as json.Number, objects as map[string]any, arrays as []any), without its
// reflection, and with field names and short values shared by the lines
// of one decoder: reading a large job's log is most of the cost of
// `runner events` and reports.
type decoder struct {
	names  map[string]string // field names seen so far, to share one copy; nil: none
	values map[string]any    // short values seen so far (step names, kinds, small numbers), by their JSON; nil: none
}

// maxNames bounds decoder.names, and maxValues decoder.values: a log
// holds few distinct field names and short values (most of its item ids
// are seen once), and a damaged one must not grow the tables without end.
const (
	maxNames      = 1024
	maxValues     = 4096
	maxValueBytes = 24
)

// maxDepth is the nesting encoding/json allows too.
const maxDepth = 10000

func newDecoder() *decoder {
	return &decoder{names: map[string]string{}, values: map[string]any{}}
}

// event decodes one line: a JSON object with "time" (RFC 3339), "job_id"
// and "type", and the event's fields. Anything after the object is an
// error, as it is for json.Valid.
func (d *decoder) event(line []byte) (Event, error) {
	p := parser{data: line, names: d.names, values: d.values}
	var e Event
	var ts []byte // the time's string token; nil: the time is not a string
	p.space()
	if !p.next('{') {
		return e, p.syntaxError("where an event (a JSON object) should begin")
	}
	e.Fields = map[string]any{}
	err := p.members(func(name string) error {
		var err error
		switch name {
		case "time":
			ts, err = p.timeToken()
		case "job_id":
			e.JobID, err = p.headerString()
		case "type":
			var typ string
			typ, err = p.headerString()
			e.Type = Type(typ)
		default:
			e.Fields[name], err = p.value()
		}
		return err
	})
	if err != nil {
		return e, err
	}
	if p.space(); p.pos < len(p.data) {
		return e, p.syntaxError("after the event")
	}
	if e.Time, err = eventTime(ts); err != nil {
		return e, err
	}
	e.ItemID, _ = e.Fields["item_id"].(string)
	return e, nil
}

// parser reads one line of JSON from pos on.
type parser struct {
	data   []byte
	pos    int
	depth  int
	names  map[string]string
	values map[string]any
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// next consumes c if it comes next.
func (p *parser) next(c byte) bool {
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// syntaxError says what is wrong at pos, where in the JSON.
func (p *parser) syntaxError(where string) error {
	if p.pos >= len(p.data) {
		return errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q %s", p.data[p.pos], where)
}

// members reads the members of an object whose '{' has been consumed,
// through its '}': for each, it reads the name and the ':' and leaves the
// value to member.
func (p *parser) members(member func(name string) error) error {
	if p.depth++; p.depth > maxDepth {
		return errors.New("exceeded max depth")
	}
	p.space()
	if p.next('}') {
		p.depth--
		return nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.syntaxError("where a field name should be")
		}
		name, err := p.name()
		if err != nil {
			return err
		}
		if p.space(); !p.next(':') {
			return p.syntaxError("after a field name")
		}
		p.space()
		if err := member(name); err != nil {
			return err
		}
		p.space()
		if p.next('}') {
			p.depth--
			return nil
		}
		if !p.next(',') {
			return p.syntaxError("after a field value")
		}
	}
}

// name reads a field name, shared with the other events that have it.
func (p *parser) name() (string, error) {
	raw, plain, err := p.rawString()
	if err != nil {
		return "", err
	}
	if !plain {
		return unquote(raw)
	}
	if s, ok := p.names[string(raw[1:len(raw)-1])]; ok {
		return s, nil
	}
	s := string(raw[1 : len(raw)-1])
	if p.names != nil && len(p.names) < maxNames {
		p.names[s] = s
	}
	return s, nil
}

// headerString reads the value of job_id or type: a string, or "" for
// any other value (as a type assertion on the decoded value gives).
func (p *parser) headerString() (string, error) {
	v, err := p.value()
	s, _ := v.(string)
	return s, err
}

// timeToken reads the value of time: its string token, quotes and all,
// left for eventTime to read without a copy; nil for any other value.
func (p *parser) timeToken() ([]byte, error) {
	if p.pos < len(p.data) && p.data[p.pos] == '"' {
		raw, _, err := p.rawString()
		return raw, err
	}
	_, err := p.value()
	return nil, err
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.syntaxError("at the end")
	}
	switch c := p.data[p.pos]; {
	case c == '"', c == '-' || '0' <= c && c <= '9':
		return p.scalar()
	case c == '{':
		p.pos++
		m := map[string]any{}
		err := p.members(func(name string) error {
			v, err := p.value()
			m[name] = v
			return err
		})
		return m, err
	case c == '[':
		return p.array()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.syntaxError("where a value should be")
}

// scalar reads a string or a number. Short ones come from the values
// seen before: a new string boxed anew into an interface value for each
// would be most of the allocations of a line.
func (p *parser) scalar() (any, error) {
	start := p.pos
	plain := true
	var err error
	if p.data[p.pos] == '"' {
		_, plain, err = p.rawString()
	} else {
		err = p.number()
	}
	if err != nil {
		return nil, err
	}
	token := p.data[start:p.pos]
	if v, ok := p.values[string(token)]; ok {
		return v, nil
	}
	var v any
	switch {
	case token[0] != '"':
		v = json.Number(token)
	case plain:
		v = string(token[1 : len(token)-1])
	default:
		s, err := unquote(token)
		if err != nil {
			return nil, err
		}
		v = s
	}
	if p.values != nil && plain && len(token) <= maxValueBytes && len(p.values) < maxValues {
		p.values[string(token)] = v
	}
	return v, nil
}

func (p *parser) array() (any, error) {
	p.pos++ // [
	if p.depth++; p.depth > maxDepth {
		return nil, errors.New("exceeded max depth")
	}
	a := []any{}
	p.space()
	if p.next(']') {
		p.depth--
		return a, nil
	}
	for {
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.next(']') {
			p.depth--
			return a, nil
		}
		if !p.next(',') {
			return nil, p.syntaxError("after an array element")
		}
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.syntaxError("in literal " + word)
	}
	p.pos += len(word)
	return nil
}

// number reads past a number, which must be spelled as JSON spells
// numbers.
func (p *parser) number() error {
	p.next('-')
	if !p.next('0') && !p.digits() {
		return p.syntaxError("in a number")
	}
	if p.next('.') && !p.digits() {
		return p.syntaxError("after a decimal point")
	}
	if p.next('e') || p.next('E') {
		if !p.next('+') {
			p.next('-')
		}
		if !p.digits() {
			return p.syntaxError("in an exponent")
		}
	}
	return nil
}

// digits consumes a run of digits and reports whether there was one.
func (p *parser) digits() bool {
	start := p.pos
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos > start
}

// rawString reads a string with its quotes. plain: it holds printable
// ASCII only and no escape, so its bytes are its value; any other string
// goes through encoding/json, which checks and decodes it (escapes,
// surrogates, invalid UTF-8) as it always has.
func (p *parser) rawString() (raw []byte, plain bool, err error) {
	start := p.pos
	plain = true
	for i := start + 1; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			return p.data[start:p.pos], plain, nil
		case c == '\\':
			plain = false
			i++ // the escaped byte does not end the string
		case c < 0x20 || c >= 0x80:
			plain = false
		}
	}
	p.pos = len(p.data)
	return nil, false, p.syntaxError("at the end")
}

func unquote(raw []byte) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// eventTime reads an event's time from its string token (nil: the time
// is not a string). The form MarshalJSON writes (UTC, up to nine
// fractional digits) is read directly, at a small part of the cost of
// time.Parse; any other form goes to time.Parse.
func eventTime(token []byte) (time.Time, error) {
	if len(token) >= 2 {
		if t, ok := parseUTC(token[1 : len(token)-1]); ok {
			return t, nil
		}
	}
	var s string
	if token != nil {
		var err error
		if s, err = unquote(token); err != nil {
			return time.Time{}, err
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, fmt.Errorf("event time %q: %w", s, err)
	}
	return t, nil
}

// parseUTC reads "2006-01-02T15:04:05.999999999Z". It declines (ok false)
// anything it is not sure of, days after the 28th included: time.Parse
// then decides.
func parseUTC(s []byte) (t time.Time, ok bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return t, false
	}
	year, ok1 := atoi(s[0:4])
	month, ok2 := atoi(s[5:7])
	day, ok3 := atoi(s[8:10])
	hour, ok4 := atoi(s[11:13])
	minute, ok5 := atoi(s[14:16])
	sec, ok6 := atoi(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || sec > 59 {
		return t, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		n, ok := atoi(frac[1:])
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 || !ok {
			return t, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// atoi reads decimal digits only (no sign).
func atoi(s []byte) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
