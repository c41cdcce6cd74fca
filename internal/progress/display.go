package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/printable"
)

// Display is the status of a running job: on a terminal, one line at the
// bottom redrawn in place (everything else is printed above it); without
// one, a plain timestamped line every plainEvery() while items run. It is
// safe for concurrent use.
type Display struct {
	err   *stream // runner's lines and the status line (stderr)
	out   *stream // stdout; err itself when both are the same file
	live  bool    // redraw a status line (a terminal, or --progress always)
	color bool
	every time.Duration // plain mode: interval of progress lines

	mu     sync.Mutex
	shown  bool // the status line is on screen
	stop   chan struct{}
	ticker sync.WaitGroup
	job    jobStatus
}

// stream is a file that commands' output and runner's own lines share; it
// remembers whether the last byte written to it ended a line, so that
// runner's next line starts on a line of its own.
type stream struct {
	w     io.Writer
	midLn bool // guarded by Display.mu
}

// Colours of Line.
const (
	Red    = "\x1b[31m"
	Green  = "\x1b[32m"
	Yellow = "\x1b[33m"
)

// plainEvery is how often plain progress lines are printed;
// RUNNER_PROGRESS_INTERVAL changes it (tests).
func plainEvery() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RUNNER_PROGRESS_INTERVAL")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Second
}

// New decides how progress is shown on stderr: mode is auto, always or
// never; quiet shows no progress at all, only the lines given to Line.
func New(stdout, stderr io.Writer, mode string, noColor, quiet bool) *Display {
	d := &Display{err: &stream{w: stderr}, every: plainEvery(), job: jobStatus{items: map[string]itemState{}}}
	d.out = d.err
	if !sameFile(stdout, stderr) {
		d.out = &stream{w: stdout}
	}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	d.live = !quiet && (mode == "always" || mode == "auto" && tty)
	d.color = d.live && !noColor && os.Getenv("NO_COLOR") == ""
	if !quiet {
		d.stop = make(chan struct{})
		d.ticker.Add(1)
		go d.tick()
	}
	return d
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

func (d *Display) tick() {
	defer d.ticker.Done()
	interval := d.every
	if d.live {
		interval = 200 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.mu.Lock()
			if d.live {
				d.redraw()
			} else if d.job.mapping {
				d.writeLine(time.Now().UTC().Format(time.RFC3339) + " progress: " + d.job.line())
			}
			d.mu.Unlock()
		}
	}
}

// SetSteps gives the number of steps of each phase of the workflow, for
// the "step 2/5" and "setup step 1/2" of the status line.
func (d *Display) SetSteps(steps map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job.steps = steps
}

// SetBreaker tells whether the workflow has a circuit breaker: only then
// does the status line show its state, closed until an event changes it.
func (d *Display) SetBreaker(configured bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job.breaker = ""
	if configured {
		d.job.breaker = "closed"
	}
}

// SetQueue tells that the job's items go to the NATS queue q, and how it
// stands now: the status line shows its workers' busy slots and those
// pulling (so that a queue no worker serves is seen, and one whose every
// slot is busy is not taken for it) and the job's tasks that wait for the
// server to deliver them again, their worker lost.
func (d *Display) SetQueue(q Queue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job.queue = q
}

// SetSpent gives what the job's agents have spent so far, running ones
// included (job.Job.Spent): the status line shows it once an agent
// reported a cost, and in the map projects it over all the items.
func (d *Display) SetSpent(spent func() eventlog.AgentUsage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job.spent = spent
}

// Observe updates the status from an event of the job.
func (d *Display) Observe(e eventlog.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job.observe(e)
	if e.Type == eventlog.TypeMapCompleted {
		d.clear()
	}
}

// Close removes the status line and stops redrawing.
func (d *Display) Close() {
	if d.stop != nil {
		close(d.stop)
		d.ticker.Wait()
		d.stop = nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	d.live = false
}

// Line prints a line of runner's above the status line, in color (one of
// Red, Green, Yellow; "" for none) on a colour terminal.
func (d *Display) Line(text, color string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	text = printable.Text(text)
	if d.color && color != "" {
		text = color + text + "\x1b[0m"
	}
	d.writeLine(text)
	d.redraw()
}

// writeLine writes text as a line of its own on stderr, after ending a
// line that commands' output left open; d.mu is held.
func (d *Display) writeLine(text string) {
	d.clear()
	d.newLine(d.err)
	io.WriteString(d.err.w, text+"\n")
}

// newLine ends the line that commands' output left open on s; d.mu is
// held.
func (d *Display) newLine(s *stream) {
	if s.midLn {
		io.WriteString(s.w, "\n")
		s.midLn = false
	}
}

// Document writes runner's machine-readable output to stdout, on a line
// of its own.
func (d *Display) Document(write func(io.Writer)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.newLine(d.out)
	write(d.out.w)
}

// clear erases the status line; d.mu is held.
func (d *Display) clear() {
	if d.shown {
		io.WriteString(d.err.w, "\r\x1b[K")
		d.shown = false
	}
}

// redraw shows the status line; d.mu is held.
func (d *Display) redraw() {
	if !d.live || d.err.midLn {
		return
	}
	s := printable.Line(d.job.line())
	if s == "" {
		d.clear()
		return
	}
	if d.color {
		s = "\x1b[2m" + s + "\x1b[0m"
	}
	io.WriteString(d.err.w, "\r\x1b[K"+s)
	d.shown = true
}

// Stdout is a writer of commands' own output to stdout.
func (d *Display) Stdout() io.Writer { return output{d: d, s: d.out} }

// Stderr is a writer of commands' own output to stderr.
func (d *Display) Stderr() io.Writer { return output{d: d, s: d.err} }

// output is a writer of commands' own output to s. It keeps track of
// whether the output left a line open; on stderr it clears the status
// line before the output and redraws it once the output ends a line.
type output struct {
	d *Display
	s *stream
}

func (o output) Write(b []byte) (int, error) {
	d := o.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if o.s == d.err {
		d.clear()
		defer d.redraw()
	}
	n, err := o.s.w.Write(b)
	if n > 0 {
		o.s.midLn = b[n-1] != '\n'
	}
	return n, err
}
