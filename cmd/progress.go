package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/runnerdev/runner/workflow/eventlog"
)

// progress is the status of a running job: on a terminal, one line at the
// bottom redrawn in place (everything else is printed above it); without
// one, a plain timestamped line every plainEvery() while items run.
type progress struct {
	w     io.Writer
	live  bool // redraw a status line (a terminal, or --progress always)
	color bool
	every time.Duration // plain mode: interval of progress lines

	mu     sync.Mutex
	shown  bool // the status line is on screen
	midLn  bool // command output left the cursor mid-line
	stop   chan struct{}
	ticker sync.WaitGroup

	// MapReduce
	mapping                               bool
	mapStart                              time.Time
	total, done, failed, skipped, running int
	waiting                               map[string]bool // items waiting out a retry delay
	breaker                               string
	// standard
	step               string
	stepN, steps       int
	attempt, limit     int
	stepStart, started time.Time
}

// plainEvery is how often plain progress lines are printed;
// RUNNER_PROGRESS_INTERVAL changes it (tests).
func plainEvery() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RUNNER_PROGRESS_INTERVAL")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Second
}

// newProgress decides how progress is shown on w: mode is auto, always or
// never.
func newProgress(w io.Writer, mode string, noColor, quiet bool) *progress {
	p := &progress{w: w, every: plainEvery(), waiting: map[string]bool{}, breaker: "closed", started: time.Now()}
	tty := false
	if f, ok := w.(*os.File); ok {
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
				fmt.Fprintf(p.w, "%s progress: %s\n", time.Now().UTC().Format(time.RFC3339), p.status())
			}
			p.mu.Unlock()
		}
	}
}

// close removes the status line and stops redrawing.
func (p *progress) close() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	p.ticker.Wait()
	p.stop = nil
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

// line prints a line of runner's above the status line.
func (p *progress) line(text string, color string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if p.midLn {
		io.WriteString(p.w, "\n")
		p.midLn = false
	}
	if p.color && color != "" {
		text = color + text + "\x1b[0m"
	}
	io.WriteString(p.w, text+"\n")
	p.redraw()
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
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// redraw shows the status line; p.mu is held.
func (p *progress) redraw() {
	if !p.live || p.midLn {
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
	io.WriteString(p.w, "\r\x1b[K"+s)
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
		pending := p.total - finished - p.running
		parts = append(parts, fmt.Sprintf("%d running", p.running), fmt.Sprintf("%d pending", max(pending, 0)))
		if elapsed := time.Since(p.mapStart); elapsed > time.Second && finished > 0 {
			rate := float64(finished) / elapsed.Seconds()
			parts = append(parts, fmt.Sprintf("%.1f/s", rate))
			if left := p.total - finished; left > 0 {
				parts = append(parts, "ETA "+time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second).String())
			}
		}
		parts = append(parts, "breaker "+strings.ReplaceAll(p.breaker, "_", "-"))
		if n := len(p.waiting); n > 0 {
			parts = append(parts, fmt.Sprintf("%d retrying", n))
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
	item := e.Str("item_id")
	switch e.Type {
	case "map_started":
		p.mapping, p.mapStart = true, time.Now()
		p.total = int(toInt64(e.Fields["total"]))
		p.done = p.total - int(toInt64(e.Fields["pending"])) // finished in an earlier run
	case "map_completed":
		p.mapping = false
		p.clear()
	case "item_started":
		if toInt64(e.Fields["attempt"]) == 1 {
			p.running++
		}
	case "item_succeeded":
		p.running--
		p.done++
	case "item_failed":
		p.running--
		p.failed++
	case "attempt_started":
		delete(p.waiting, item)
		if item == "" {
			p.attempt = int(toInt64(e.Fields["attempt"]))
		}
	case "retry_decision":
		if e.Str("action") == "retry" && item != "" {
			p.waiting[item] = true
		}
		if item == "" {
			p.limit = int(toInt64(e.Fields["limit"]))
		}
	case "item_retrying":
		p.waiting[item] = true
	case "circuit_opened", "circuit_half_open", "circuit_closed":
		if e.Str("scope") == "workflow" {
			p.breaker = strings.TrimPrefix(e.Type, "circuit_")
			if p.breaker == "opened" {
				p.breaker = "open"
			}
		}
	case "step_started":
		if item == "" {
			p.step, p.stepN, p.stepStart = e.Str("step"), int(toInt64(e.Fields["index"])), time.Now()
			p.attempt, p.limit = 1, 0
		}
	case "step_completed", "step_failed", "step_skipped":
		if item == "" {
			p.step = ""
		}
	}
}

// output wraps a writer of commands' own output (a terminal shared with
// the status line): the line is cleared before the output and redrawn
// once the output ends a line.
func (p *progress) output(w io.Writer) io.Writer {
	if !p.live {
		return w
	}
	return outputWriter{p: p, w: w}
}

type outputWriter struct {
	p *progress
	w io.Writer
}

func (o outputWriter) Write(b []byte) (int, error) {
	p := o.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	n, err := o.w.Write(b)
	if len(b) > 0 {
		p.midLn = b[len(b)-1] != '\n'
	}
	p.redraw()
	return n, err
}
