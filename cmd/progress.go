package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/runnerdev/runner/eventlog"
)

// progress is the status of a running job: on a terminal, one line at the
// bottom redrawn in place (everything else is printed above it); without
// one, a plain timestamped line every plainEvery() while items run.
type progress struct {
	err   *stream // runner's lines and the status line (stderr)
	out   *stream // stdout; err itself when both are the same file
	live  bool    // redraw a status line (a terminal, or --progress always)
	color bool
	every time.Duration // plain mode: interval of progress lines

	mu     sync.Mutex
	shown  bool // the status line is on screen
	stop   chan struct{}
	ticker sync.WaitGroup

	// MapReduce
	mapping                      bool
	mapStart                     time.Time
	total, done, failed, skipped int
	items                        map[string]itemState // started items not finished
	inState                      [itemStates]int      // how many items are in each state
	breaker                      string               // "": no workflow circuit breaker
	// standard
	step               string
	stepN, steps       int
	attempt, limit     int
	stepStart, started time.Time
}

// itemState is what a started item of the map phase is doing. An item
// waiting out a delay has given its max_parallel slot back, so only items
// in itemRunning hold one.
type itemState int

const (
	itemRunning  itemState = iota
	itemRetrying           // waiting out a command-level or item-level retry delay
	itemPolling            // waiting out a repeat interval
	itemStates
)

// stream is a file that commands' output and runner's own lines share; it
// remembers whether the last byte written to it ended a line, so that
// runner's next line starts on a line of its own.
type stream struct {
	w     io.Writer
	midLn bool // guarded by progress.mu
}

// plainEvery is how often plain progress lines are printed;
// RUNNER_PROGRESS_INTERVAL changes it (tests).
func plainEvery() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RUNNER_PROGRESS_INTERVAL")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Second
}

// newProgress decides how progress is shown on stderr: mode is auto,
// always or never.
func newProgress(stdout, stderr io.Writer, mode string, noColor, quiet bool) *progress {
	p := &progress{err: &stream{w: stderr}, every: plainEvery(), items: map[string]itemState{}, started: time.Now()}
	p.out = p.err
	if !sameFile(stdout, stderr) {
		p.out = &stream{w: stdout}
	}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	p.live = !quiet && (mode == "always" || mode == "auto" && tty)
	p.color = p.live && !noColor && os.Getenv("NO_COLOR") == ""
	if !quiet {
		p.stop = make(chan struct{})
		p.ticker.Add(1)
		go p.tick()
	}
	return p
}

// sameFile reports whether two output files are one (`2>&1`, or both the
// terminal).
func sameFile(a, b io.Writer) bool {
	fa, ok := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok || !ok2 {
		return false
	}
	sa, err := fa.Stat()
	sb, err2 := fb.Stat()
	return err == nil && err2 == nil && os.SameFile(sa, sb)
}

func (p *progress) tick() {
	defer p.ticker.Done()
	interval := p.every
	if p.live {
		interval = 200 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.live {
				p.redraw()
			} else if p.mapping {
				p.writeLine(time.Now().UTC().Format(time.RFC3339) + " progress: " + p.status())
			}
			p.mu.Unlock()
		}
	}
}

// close removes the status line and stops redrawing.
func (p *progress) close() {
	if p.stop != nil {
		close(p.stop)
		p.ticker.Wait()
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.live = false
}

// line prints a line of runner's above the status line.
func (p *progress) line(text string, color string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.color && color != "" {
		text = color + text + "\x1b[0m"
	}
	p.writeLine(text)
	p.redraw()
}

// writeLine writes text as a line of its own on stderr, after ending a
// line that commands' output left open; p.mu is held.
func (p *progress) writeLine(text string) {
	p.clear()
	p.newLine(p.err)
	io.WriteString(p.err.w, text+"\n")
}

// newLine ends the line that commands' output left open on s; p.mu is
// held.
func (p *progress) newLine(s *stream) {
	if s.midLn {
		io.WriteString(s.w, "\n")
		s.midLn = false
	}
}

// document writes runner's machine-readable output to stdout, on a line
// of its own.
func (p *progress) document(write func(io.Writer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.newLine(p.out)
	write(p.out.w)
}

// Colours of line.
const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
)

// clear erases the status line; p.mu is held.
func (p *progress) clear() {
	if p.shown {
		io.WriteString(p.err.w, "\r\x1b[K")
		p.shown = false
	}
}

// redraw shows the status line; p.mu is held.
func (p *progress) redraw() {
	if !p.live || p.err.midLn {
		return
	}
	s := p.status()
	if s == "" {
		p.clear()
		return
	}
	if p.color {
		s = "\x1b[2m" + s + "\x1b[0m"
	}
	io.WriteString(p.err.w, "\r\x1b[K"+s)
	p.shown = true
}

// status is the progress in one line; p.mu is held.
func (p *progress) status() string {
	if p.mapping {
		finished := p.done + p.failed + p.skipped
		parts := []string{fmt.Sprintf("map %d/%d done", finished, p.total)}
		if p.failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", p.failed))
		}
		parts = append(parts, fmt.Sprintf("%d running", p.inState[itemRunning]))
		for _, w := range []struct {
			state itemState
			what  string
		}{{itemRetrying, "retrying"}, {itemPolling, "polling"}} {
			if n := p.inState[w.state]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, w.what))
			}
		}
		parts = append(parts, fmt.Sprintf("%d pending", max(p.total-finished-len(p.items), 0)))
		if elapsed := time.Since(p.mapStart); elapsed > time.Second && finished > 0 {
			rate := float64(finished) / elapsed.Seconds()
			parts = append(parts, fmt.Sprintf("%.1f/s", rate))
			if left := p.total - finished; left > 0 {
				parts = append(parts, "ETA "+time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second).String())
			}
		}
		if p.breaker != "" {
			parts = append(parts, "breaker "+strings.ReplaceAll(p.breaker, "_", "-"))
		}
		return strings.Join(parts, " · ")
	}
	if p.step == "" {
		return ""
	}
	s := fmt.Sprintf("step %d/%d %s", p.stepN, p.steps, p.step)
	if p.attempt > 1 || p.limit > 0 {
		s += fmt.Sprintf(" · attempt %d", p.attempt)
		if p.limit > 0 {
			s += fmt.Sprintf("/%d", p.limit)
		}
	}
	return s + " · " + time.Since(p.stepStart).Round(time.Second).String()
}

// observe updates the counters from an event.
func (p *progress) observe(e eventlog.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	item := e.ItemID
	switch e.Type {
	case eventlog.TypeMapStarted:
		p.mapping, p.mapStart = true, time.Now()
		p.total = int(toInt64(e.Fields["total"]))
		p.done = p.total - int(toInt64(e.Fields["pending"])) // finished in an earlier run
	case eventlog.TypeMapCompleted:
		p.mapping = false
		p.clear()
	case eventlog.TypeItemStarted: // every attempt of the item, once it holds a slot
		p.move(item, itemRunning)
	case eventlog.TypeItemSucceeded:
		p.finish(item)
		p.done++
	case eventlog.TypeItemFailed:
		p.finish(item)
		p.failed++
	case eventlog.TypeAttemptStarted:
		if _, started := p.items[item]; started {
			p.move(item, itemRunning) // it took a slot again
		}
		if item == "" {
			p.attempt = int(toInt64(e.Fields["attempt"]))
		}
	case eventlog.TypeRetryDecision:
		if _, started := p.items[item]; started && e.Str("action") == "retry" {
			p.move(item, itemRetrying)
		}
		if item == "" {
			p.limit = int(toInt64(e.Fields["limit"]))
		}
	case eventlog.TypeItemRetrying:
		p.move(item, itemRetrying)
	case eventlog.TypeStepRepeat:
		if _, started := p.items[item]; started {
			p.move(item, itemPolling)
		}
	case eventlog.TypeCircuitOpened, eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
		if e.Str("scope") == "workflow" {
			p.breaker = strings.TrimPrefix(string(e.Type), "circuit_")
			if p.breaker == "opened" {
				p.breaker = "open"
			}
		}
	case eventlog.TypeStepStarted:
		if item == "" {
			p.step, p.stepN, p.stepStart = e.Str("step"), int(toInt64(e.Fields["index"])), time.Now()
			p.attempt, p.limit = 1, 0
		}
	case eventlog.TypeStepCompleted, eventlog.TypeStepFailed, eventlog.TypeStepSkipped:
		if item == "" {
			p.step = ""
		}
	}
}

// move records that a started item is now in state to; p.mu is held.
func (p *progress) move(item string, to itemState) {
	p.finish(item)
	p.items[item] = to
	p.inState[to]++
}

// finish forgets a started item; p.mu is held.
func (p *progress) finish(item string) {
	if from, ok := p.items[item]; ok {
		p.inState[from]--
		delete(p.items, item)
	}
}

// output is a writer of commands' own output to s. It keeps track of
// whether the output left a line open; on stderr it clears the status
// line before the output and redraws it once the output ends a line.
func (p *progress) output(s *stream) io.Writer { return outputWriter{p: p, s: s} }

type outputWriter struct {
	p *progress
	s *stream
}

func (o outputWriter) Write(b []byte) (int, error) {
	p := o.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.s == p.err {
		p.clear()
		defer p.redraw()
	}
	n, err := o.s.w.Write(b)
	if n > 0 {
		o.s.midLn = b[n-1] != '\n'
	}
	return n, err
}
