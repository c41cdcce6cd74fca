package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/appendfile"
)

// Event is one entry of the log. Fields holds the type-specific fields; it
// never contains "time", "job_id" or "type". ItemID is the "item_id" field
// when it is a string (the events of a map item carry one): the readers of
// the log, the constructors and Emit set it from Fields, which keeps the
// field too for the code that looks it up by name.
type Event struct {
	Time   time.Time
	JobID  string
	Type   Type
	ItemID string
	Fields map[string]any
}

// MarshalJSON writes time, job_id and type first, then the fields sorted by
// name, all at one level.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"time":`)
	t, _ := json.Marshal(e.Time.UTC().Format(time.RFC3339Nano))
	b.Write(t)
	b.WriteString(`,"job_id":`)
	id, _ := json.Marshal(e.JobID)
	b.Write(id)
	b.WriteString(`,"type":`)
	typ, _ := json.Marshal(e.Type)
	b.Write(typ)
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(e.Fields[k])
		if err != nil {
			return nil, fmt.Errorf("event %s: field %s: %w", e.Type, k, err)
		}
		name, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the flat form written by MarshalJSON: numbers
// become json.Number, objects map[string]any and arrays []any.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := new(decoder).event(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// Str returns a string field, or "".
func (e Event) Str(name string) string {
	s, _ := e.Fields[name].(string)
	return s
}

// Int returns a whole-number field, or 0: as its constructor wrote it (an
// int or int64) or as it was read back from the log (a json.Number).
func (e Event) Int(name string) int64 {
	switch n := e.Fields[name].(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	case float64:
		return int64(n)
	}
	return 0
}

// Float returns a number field, or 0: as its constructor wrote it or as
// it was read back from the log (a json.Number).
func (e Event) Float(name string) float64 {
	switch n := e.Fields[name].(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return float64(e.Int(name))
}

// Log appends events to a file. It is safe for concurrent use.
type Log struct {
	mu     sync.Mutex
	f      *appendfile.File
	jobID  string
	now    func() time.Time
	redact func(string) string
	buf    []byte
	held   []Event // waiting for their sequels, in order: see Coalesce
}

// Options configure a Log.
type Options struct {
	Now    func() time.Time    // default time.Now
	Redact func(string) string // applied to every string value; default none
}

// Open opens (creating if needed, mode 0600) the log at path for appending,
// after cutting a torn last line (see appendfile).
func Open(path, jobID string, opts Options) (*Log, error) {
	f, err := appendfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Log{f: f, jobID: jobID, now: opts.Now, redact: opts.Redact}, nil
}

// Emit appends e (one of the constructors' events), stamped with the time
// and the log's job, and returns it as written (redacted).
func (l *Log) Emit(e Event) (Event, error) {
	written, err := l.EmitAll(e)
	return written[0], err
}

// EmitAll appends events produced together with one write, so that the
// log has all of them or, after a crash, none, and returns them as
// written (redacted).
func (l *Log) EmitAll(events ...Event) ([]Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(events)
}

// write appends events with one write; l.mu is held.
func (l *Log) write(events []Event) ([]Event, error) {
	written := make([]Event, len(events))
	l.buf = l.buf[:0]
	now := l.now()
	for i, e := range events {
		if l.redact != nil {
			e = e.Redacted(l.redact)
		}
		e.Time, e.JobID = now, l.jobID
		written[i] = e
		line, err := e.MarshalJSON()
		if err != nil {
			return written, err
		}
		l.buf = append(append(l.buf, line...), '\n')
	}
	if len(l.buf) == 0 {
		return written, nil
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return written, fmt.Errorf("event log: %w", err)
	}
	return written, nil
}

// Coalesce appends events as EmitAll does, but holds back the last one
// when the executor follows it at once with another of the same item
// (step_started by the attempt's start or the step's failure; an
// attempt's end by step_completed, its retry decision or step_failed):
// the held event goes out with the next events of its item, in one
// write, or with the next event that names no item (the job's own, which
// so stay in order with every item's), or when the log closes. The
// events of one call are one item's. It returns the events written now,
// held ones included, in the order they were written.
func (l *Log) Coalesce(events ...Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	item := events[0].ItemID
	var due, others []Event
	for _, e := range l.held {
		if item == "" || e.ItemID == item {
			due = append(due, e)
		} else {
			others = append(others, e)
		}
	}
	events, l.held = append(due, events...), others
	if hasSequel(events[len(events)-1].Type) {
		l.held = append(l.held, events...)
		return nil, nil
	}
	return l.write(events)
}

// hasSequel reports whether the executor always follows an event of type
// t with another of the same step before the step ends.
func hasSequel(t Type) bool {
	switch t {
	case TypeStepStarted, TypeAttemptSucceeded, TypeAttemptFailed:
		return true
	}
	return false
}

// Close writes the events Coalesce holds, syncs and closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, werr := l.write(l.held)
	l.held = nil
	serr := l.f.Sync()
	if err := l.f.Close(); err != nil {
		return err
	}
	return errors.Join(werr, serr)
}

func redactFields(fields map[string]any, redact func(string) string) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[k] = redactValue(v, redact)
	}
	return out
}

func redactValue(v any, redact func(string) string) any {
	switch v := v.(type) {
	case string:
		return redact(v)
	case map[string]any:
		return redactFields(v, redact)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(e, redact)
		}
		return out
	}
	return v
}
