package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// maxBars bounds the attempts drawn one by one, so that a job of
// 100,000 items still gives a page a browser opens; the agent attempts
// after them are drawn merged into cells.
const maxBars = 5000

// maxStepLanes bounds the lanes of steps: the steps met after the first
// maxStepLanes-1 share the last one.
const maxStepLanes = 40

// timeline is what the report draws: attempts on lanes, the delays
// between retried attempts, circuit-breaker pauses, and the times between
// the runs of a job (interrupted, resumed later).
type timeline struct {
	start, end time.Time
	steps      []string // the labels of the lanes of steps (setup, steps, reduce), first
	lanes      int      // the lanes of steps, then one per agent slot
	bars       []bar
	gaps       []span
	pauses     []span
	breaks     []span // from the end of a run of the job to the start of the next
	dropped    int    // agent attempts beyond maxBars, drawn merged in cells
	cells      cells  // those attempts
}

type bar struct {
	id         int
	lane       int
	start, end time.Time
	class      string // ok, fail, timeout, open (still running)
	title      string
}

// running is an attempt started and not finished yet.
type running struct {
	start time.Time
	n     int64
	step  string
	who   string // the item and step, or the step
	item  string // the item whose step's attempt it is; "" for a step's
	slot  int    // an item's attempt: its agent slot, from 0
	seq   int    // an item's attempt: how many items' attempts started before it
}

type span struct {
	after      int // a retry delay: the id of the attempt it follows
	lane       int
	start, end time.Time
	title      string
}

// finished is the last finished attempt of a key, while a retry delay
// may follow it.
type finished struct {
	id   int
	kept bool // drawn one by one, or among the first maxBars
}

// waiting is a retry delay under way.
type waiting struct {
	since time.Time
	after finished
}

// builder reads a job's events in order into its timeline, holding only
// what is under way: attempts started and not finished, retry delays,
// open breakers, and the first maxBars agent attempts.
type builder struct {
	tl           timeline
	open         map[string]running   // attempts started, by key
	last         map[string]finished  // the last attempt of each key, while it failed and no retry decision followed
	waiting      map[string]waiting   // retry delays by attempt key
	paused       map[string]time.Time // breakers open since, by scope and step
	agent        []bar                // the first maxBars attempts of items, laid on lanes at the end
	lastOf       map[string]placed    // where each running item's last attempt is drawn
	slots        []bool               // the agent slots busy now
	itemAttempts int                  // the attempts of items started so far
	nextID       int                  // the attempts finished so far: the id of the next
	stepLane     map[string]int
	ended        time.Time // the end of the last run, until the next event
}

func newBuilder() *builder {
	return &builder{open: map[string]running{}, last: map[string]finished{}, waiting: map[string]waiting{},
		paused: map[string]time.Time{}, stepLane: map[string]int{}, lastOf: map[string]placed{}}
}

// key names the attempts of one step (of one item).
func key(e eventlog.Event) string { return e.ItemID + "\x00" + e.Str("step") }

// who says whose attempt an event is of: the item and step, or the step.
func who(e eventlog.Event) string {
	if item := e.ItemID; item != "" {
		return "item " + item + ", " + e.Str("step")
	}
	return e.Str("step")
}

func (b *builder) add(e eventlog.Event) {
	if b.tl.start.IsZero() {
		b.tl.start = e.Time
	}
	b.tl.end = e.Time
	if !b.ended.IsZero() {
		if e.Time.After(b.ended) {
			b.tl.breaks = append(b.tl.breaks, span{start: b.ended, end: e.Time, title: "no run of the job for " + roughly(e.Time.Sub(b.ended))})
		}
		b.ended = time.Time{}
	}
	switch e.Type {
	case eventlog.TypeAttemptStarted:
		b.begin(key(e), e)
	case eventlog.TypeAttemptSucceeded, eventlog.TypeAttemptFailed:
		b.finish(key(e), e)
	case eventlog.TypeItemFailed:
		b.conflicted(e)
		delete(b.lastOf, e.ItemID)
	case eventlog.TypeItemSucceeded, eventlog.TypeItemSkipped:
		delete(b.lastOf, e.ItemID)
	case eventlog.TypeRetryDecision:
		k := key(e)
		if last, ok := b.last[k]; ok && e.Str("action") == "retry" {
			b.waiting[k] = waiting{since: e.Time, after: last}
		}
		delete(b.last, k)
	case eventlog.TypeCircuitOpened:
		b.paused[e.Str("scope")+"\x00"+e.Str("step")] = e.Time
	case eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
		pk := e.Str("scope") + "\x00" + e.Str("step")
		if since, ok := b.paused[pk]; ok {
			b.tl.pauses = append(b.tl.pauses, span{start: since, end: e.Time, title: "circuit breaker open (" + e.Str("scope") + " " + e.Str("step") + ")"})
			delete(b.paused, pk)
		}
	}
	if eventlog.JobEnded(e.Type) || e.Type == eventlog.TypeDLQRetryFinished {
		b.closeOpen(e.Time)
		b.ended = e.Time
	}
}

// begin opens the attempt e starts: an item's takes the first agent
// slot free.
func (b *builder) begin(k string, e eventlog.Event) {
	if r, ok := b.open[k]; ok && r.item != "" { // started again without an end: that one is not drawn
		b.slots[r.slot] = false
	}
	r := running{start: e.Time, n: e.Int("attempt"), step: e.Str("step"), who: who(e), item: e.ItemID}
	if r.item != "" {
		r.slot = slices.Index(b.slots, false)
		if r.slot < 0 {
			r.slot = len(b.slots)
			b.slots = append(b.slots, false)
		}
		b.slots[r.slot] = true
		r.seq = b.itemAttempts
		b.itemAttempts++
	}
	b.open[k] = r
	if w, ok := b.waiting[k]; ok {
		if w.after.kept {
			b.tl.gaps = append(b.tl.gaps, span{after: w.after.id, start: w.since, end: e.Time, title: who(e) + ": retry delay"})
		}
		delete(b.waiting, k)
	}
}

// finish draws the attempt that e, its end, finishes.
func (b *builder) finish(k string, e eventlog.Event) {
	r, ok := b.open[k]
	if !ok {
		return
	}
	delete(b.open, k)
	a := bar{start: r.start, end: e.Time, class: "ok", title: fmt.Sprintf("%s, attempt %d: succeeded in %s", who(e), r.n, e.Time.Sub(r.start).Round(time.Millisecond))}
	if e.Type == eventlog.TypeAttemptFailed {
		a.class = "fail"
		if e.Str("kind") == "timeout" {
			a.class = "timeout"
		}
		a.title = fmt.Sprintf("%s, attempt %d: %s", who(e), r.n, e.Str("message"))
	}
	b.last[k] = b.place(a, r)
	if e.Type == eventlog.TypeAttemptSucceeded {
		delete(b.last, k) // no retry delay follows a success
	}
}

// conflicted draws as failed the last attempt of an item whose merge
// into the job branch conflicted, e its end: the attempt succeeded, the
// item did not.
func (b *builder) conflicted(e eventlog.Event) {
	p, ok := b.lastOf[e.ItemID]
	if !ok || e.Str("kind") != "merge_conflict" {
		return
	}
	if p.index < 0 {
		b.tl.cells.reclass(p.slot, p.from, p.to, "ok", "fail")
		return
	}
	b.agent[p.index].class = "fail"
	b.agent[p.index].title += "; its merge into the job branch conflicted in " + strings.Join(strs(e.Fields["conflicts"]), ", ")
}

// place adds an attempt's bar: on its step's lane, or on its agent
// slot's (drawn one by one among the first maxBars, merged into cells
// after them).
func (b *builder) place(a bar, r running) finished {
	a.id = b.nextID
	b.nextID++
	if r.item == "" {
		a.lane = b.laneOf(r.step)
		b.tl.bars = append(b.tl.bars, a)
		return finished{id: a.id, kept: true}
	}
	b.slots[r.slot] = false
	a.lane = r.slot // until assignLanes lays it on a lane
	if r.seq >= maxBars {
		b.tl.dropped++
		from, to := b.tl.activeAt(a.start), b.tl.activeAt(a.end)
		b.tl.cells.add(r.slot, from, to, a.class)
		b.lastOf[r.item] = placed{index: -1, slot: r.slot, from: from, to: to}
		return finished{id: a.id}
	}
	b.lastOf[r.item] = placed{index: len(b.agent)}
	b.agent = append(b.agent, a)
	return finished{id: a.id, kept: true}
}

// placed is where an item's last attempt is drawn: agent[index], or
// merged into the cells of its slot from its start to its end.
type placed struct {
	index    int // -1: in cells
	slot     int
	from, to time.Duration
}

// laneOf is the lane of a step (not an item's), a new one for a step not
// met before, up to maxStepLanes.
func (b *builder) laneOf(step string) int {
	if lane, ok := b.stepLane[step]; ok {
		return lane
	}
	if len(b.tl.steps) == maxStepLanes-1 {
		b.tl.steps = append(b.tl.steps, "other steps")
	}
	lane := min(len(b.tl.steps), maxStepLanes-1)
	if lane == len(b.tl.steps) {
		b.tl.steps = append(b.tl.steps, step)
	}
	b.stepLane[step] = lane
	return lane
}

// closeOpen ends at end, drawn as unfinished, the attempts that a run of
// the job left open (it was interrupted, or is still running), in a
// stable order.
func (b *builder) closeOpen(end time.Time) {
	for _, k := range slices.Sorted(maps.Keys(b.open)) {
		r := b.open[k]
		b.place(bar{start: r.start, end: end, class: "open", title: "still running or interrupted: " + r.who}, r)
		delete(b.open, k)
	}
}

// timeline ends the timeline at the last event read: what is still open
// is drawn up to it.
func (b *builder) timeline() timeline {
	if b.tl.start.IsZero() {
		return timeline{}
	}
	b.closeOpen(b.tl.end)
	for _, k := range slices.Sorted(maps.Keys(b.paused)) {
		b.tl.pauses = append(b.tl.pauses, span{start: b.paused[k], end: b.tl.end, title: "circuit breaker open"})
	}
	b.tl.assignLanes(b.agent, len(b.slots))
	return b.tl
}

// assignLanes puts the agent attempts drawn one by one on the lanes after
// the steps' in start order, each on the first lane free by then: as many
// lanes as attempts ever ran at once, which is the job's max_parallel when
// it was busy. The attempts merged into cells lie on the lanes of the
// slots they took as they started (the same lanes but where an attempt
// was left unfinished by a run that did not end: it holds its slot until
// it starts again).
func (tl *timeline) assignLanes(agent []bar, slots int) {
	slices.SortStableFunc(agent, func(a, b bar) int { return a.start.Compare(b.start) })
	if len(agent)+len(tl.bars) > maxBars {
		keep := max(maxBars-len(tl.bars), 0)
		for _, a := range agent[keep:] {
			tl.dropped++
			tl.cells.add(a.lane, tl.activeAt(a.start), tl.activeAt(a.end), a.class)
		}
		agent = agent[:keep]
	}
	var laneEnd []time.Time
	for _, b := range agent {
		lane := slices.IndexFunc(laneEnd, func(end time.Time) bool { return !end.After(b.start) })
		if lane < 0 {
			laneEnd = append(laneEnd, time.Time{})
			lane = len(laneEnd) - 1
		}
		laneEnd[lane] = b.end
		b.lane = len(tl.steps) + lane
		tl.bars = append(tl.bars, b)
	}
	tl.lanes = len(tl.steps) + len(laneEnd)
	if tl.dropped > 0 {
		tl.lanes = len(tl.steps) + max(len(laneEnd), slots)
	}
	// A retry delay is drawn on the lane of the attempt that failed before
	// it; one after an attempt not drawn one by one is not drawn.
	lanes := map[int]int{}
	for _, b := range tl.bars {
		lanes[b.id] = b.lane
	}
	tl.gaps = slices.DeleteFunc(tl.gaps, func(g span) bool { _, ok := lanes[g.after]; return !ok })
	for i, g := range tl.gaps {
		tl.gaps[i].lane = lanes[g.after]
	}
}

// activeAt is the time the job had run by t: the breaks before t not
// counted.
func (tl *timeline) activeAt(t time.Time) time.Duration {
	d := t.Sub(tl.start)
	for _, br := range tl.breaks {
		if !t.Before(br.end) {
			d -= br.end.Sub(br.start)
		}
	}
	return max(d, 0)
}

// roughly is d rounded to what a reader wants of it: milliseconds under
// a second, seconds above.
func roughly(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
