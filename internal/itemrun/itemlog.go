package itemrun

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

// The runs of a job, as an item log's headers name them.
const (
	RunFirst    = "run"
	RunResume   = "resume"
	RunDLQRetry = "dlq retry"
)

// LogHeader is the line that starts an attempt's output in an item's log,
// so that the attempts and the runs (run, resume, dlq retry) that wrote
// one log can be told apart:
//
//	=== item b attempt 2 (run: dlq retry, 2026-11-27T22:50:00Z) ===
type LogHeader struct {
	ItemID  string
	Attempt int
	Run     string    // RunFirst, RunResume or RunDLQRetry; "" in a log of an older runner
	Start   time.Time // when the attempt started
	Worker  string    // the NATS worker that ran it; "" for this machine
}

// String is the header's line, without its newline.
func (h LogHeader) String() string {
	where := ""
	if h.Worker != "" {
		where = ", worker " + printable.Line(h.Worker)
	}
	return fmt.Sprintf("=== item %s attempt %d (run: %s, %s%s) ===", printable.Line(h.ItemID), h.Attempt, h.Run, h.Start.UTC().Format(time.RFC3339), where)
}

var (
	logHeaderLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^=== item (.*) attempt ([0-9]+) \(run: (run|resume|dlq retry), ([^,)]+)(?:, worker (.+))?\) ===$`)
	})
	// olderHeaderLine is what runners before LogHeader wrote between an
	// item's attempts (none before its first).
	olderHeaderLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^--- attempt ([0-9]+) ---$`) })
)

// MayBeLogHeader says, without copying it, whether a line of an item's
// log starts as a header does; ParseLogHeader tells whether it is one.
func MayBeLogHeader(line []byte) bool {
	return bytes.HasPrefix(line, []byte("=== item ")) || bytes.HasPrefix(line, []byte("--- attempt "))
}

// ParseLogHeader reads a line (without its newline) that is a LogHeader,
// or the separator that older runners wrote before an attempt after the
// first; it reports false for any other line.
func ParseLogHeader(line string) (LogHeader, bool) {
	if m := logHeaderLine().FindStringSubmatch(line); m != nil {
		attempt, err := strconv.Atoi(m[2])
		start, terr := time.Parse(time.RFC3339, m[4])
		if err != nil || terr != nil {
			return LogHeader{}, false
		}
		return LogHeader{ItemID: m[1], Attempt: attempt, Run: m[3], Start: start, Worker: m[5]}, true
	}
	if m := olderHeaderLine().FindStringSubmatch(line); m != nil {
		attempt, err := strconv.Atoi(m[1])
		return LogHeader{Attempt: attempt}, err == nil
	}
	return LogHeader{}, false
}

// AppendItemLog appends text to the item log at path, after a header line
// when header is not "" (a log that cannot be written does not fail the
// item: it is not reported).
func AppendItemLog(path, header, text string) {
	l := &lazyFile{path: path, header: header}
	_, _ = l.Write([]byte(text))
	_ = l.Close()
}

// lazyFile is an item's log, created (with its directory) on its first
// write, which the header precedes: an attempt that prints nothing adds
// nothing, and items that print nothing leave no file behind.
type lazyFile struct {
	mu     sync.Mutex
	path   string
	header string // the attempt's LogHeader line; "" for none
	f      *os.File
	err    error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = l.open()
	}
	if l.err != nil {
		return len(p), nil // a log that cannot be written does not fail the item
	}
	return l.f.Write(p)
}

// open creates or opens the log for appending and writes the header.
func (l *lazyFile) open() (*os.File, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	if err != nil || l.header == "" {
		return f, err
	}
	if _, err := f.WriteString(l.header + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
