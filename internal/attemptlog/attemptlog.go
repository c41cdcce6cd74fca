package attemptlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/printable"
)

// The runs of a job, as a log's headers name them.
const (
	RunFirst    = "run"
	RunResume   = "resume"
	RunDLQRetry = "dlq retry"
)

// What a log is the output of, as its headers name it.
const (
	Item = "item" // a map item's attempt: all its steps
	Step = "step" // a step's attempt (a standard workflow's, setup's, reduce's, merge's)
)

// Header is the line that starts an attempt's output in a log, so that
// the attempts and the runs (run, resume, dlq retry) that wrote one log
// can be told apart:
//
//	=== item b attempt 2 (run: dlq retry, 2026-11-27T22:50:00Z) ===
//	=== step vet attempt 1 (run: run, 2026-11-27T22:50:00Z) ===
type Header struct {
	Kind    string // Item or Step
	Name    string // the item's id, the step's label
	Attempt int
	Run     string    // RunFirst, RunResume or RunDLQRetry; "" in a log of an older runner
	Start   time.Time // when the attempt started
	Worker  string    // the NATS worker that ran it; "" for this machine
}

// String is the header's line, without its newline.
func (h Header) String() string {
	where := ""
	if h.Worker != "" {
		where = ", worker " + printable.Line(h.Worker)
	}
	return fmt.Sprintf("=== %s %s attempt %d (run: %s, %s%s) ===", h.Kind, printable.Line(h.Name), h.Attempt, h.Run, h.Start.UTC().Format(time.RFC3339), where)
}

var (
	headerLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^=== (item|step) (.*) attempt ([0-9]+) \(run: (run|resume|dlq retry), ([^,)]+)(?:, worker (.+))?\) ===$`)
	})
	// olderHeaderLine is what runners before Header wrote between an
	// item's attempts (none before its first).
	olderHeaderLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^--- attempt ([0-9]+) ---$`) })
)

// MayBeHeader says, without copying it, whether a line of a log starts as
// a header does; ParseHeader tells whether it is one.
func MayBeHeader(line []byte) bool {
	return bytes.HasPrefix(line, []byte("=== item ")) || bytes.HasPrefix(line, []byte("=== step ")) || bytes.HasPrefix(line, []byte("--- attempt "))
}

// ParseHeader reads a line (without its newline) that is a Header, or the
// separator that older runners wrote before an item's attempt after the
// first; it reports false for any other line.
func ParseHeader(line string) (Header, bool) {
	if m := headerLine().FindStringSubmatch(line); m != nil {
		attempt, err := strconv.Atoi(m[3])
		start, terr := time.Parse(time.RFC3339, m[5])
		if err != nil || terr != nil {
			return Header{}, false
		}
		return Header{Kind: m[1], Name: m[2], Attempt: attempt, Run: m[4], Start: start, Worker: m[6]}, true
	}
	if m := olderHeaderLine().FindStringSubmatch(line); m != nil {
		attempt, err := strconv.Atoi(m[1])
		return Header{Kind: Item, Attempt: attempt}, err == nil
	}
	return Header{}, false
}

// Append appends text to the log at path after h's line (a log that
// cannot be written fails nothing: it is not reported).
func Append(path string, h Header, text string) {
	l := Open(path)
	l.Begin(h)
	_, _ = l.Write([]byte(text))
	_ = l.Close()
}

// File is a log, created (with its directory) on its first write: an
// attempt that prints nothing adds nothing to it, and what prints nothing
// leaves no file behind. A write that follows Begin writes the attempt's
// header first. It is safe for concurrent use; a log that cannot be
// written takes every write and keeps none (it does not fail the command
// whose output it is).
type File struct {
	mu     sync.Mutex
	path   string
	header string // the next attempt's header line, not written yet; "" for none
	f      *os.File
	err    error
}

// Open returns the log at path, not created yet.
func Open(path string) *File { return &File{path: path} }

// Begin starts an attempt: its header precedes the next write.
func (l *File) Begin(h Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.header = h.String()
}

func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = l.open()
	}
	if l.err == nil && l.header != "" {
		_, l.err = l.f.WriteString(l.header + "\n")
		l.header = ""
	}
	if l.err != nil {
		return len(p), nil
	}
	return l.f.Write(p)
}

// open creates or opens the log for appending.
func (l *File) open() (*os.File, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	return f, err
}

// Close closes the log's file if a write opened it.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f, l.err = nil, errors.New("closed")
	return err
}
