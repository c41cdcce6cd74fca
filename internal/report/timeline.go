package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// maxBars bounds the attempts drawn, so that a job of 100,000 items still
// gives a page a browser opens.
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
	dropped    int    // attempts beyond maxBars
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
}

type span struct {
	after      int // a retry delay: the id of the attempt it follows
	lane       int
	start, end time.Time
	title      string
}

// buildTimeline turns a job's events into its timeline.
func buildTimeline(events []eventlog.Event) timeline {
	if len(events) == 0 {
		return timeline{}
	}
	b := builder{open: map[string]running{}, last: map[string]int{}, waiting: map[string]time.Time{},
		paused: map[string]time.Time{}, stepLane: map[string]int{}, lastOf: map[string]int{}}
	b.tl.start, b.tl.end = events[0].Time, events[len(events)-1].Time
	for _, e := range events {
		b.add(e)
	}
	b.closeOpen(b.tl.end)
	for _, k := range slices.Sorted(maps.Keys(b.paused)) {
		b.tl.pauses = append(b.tl.pauses, span{start: b.paused[k], end: b.tl.end, title: "circuit breaker open"})
	}
	b.tl.assignLanes(b.agent)
	return b.tl
}

// builder reads a job's events in order into its timeline.
type builder struct {
	tl       timeline
	open     map[string]running   // attempts started, by key
	last     map[string]int       // the id of each key's last finished attempt
	waiting  map[string]time.Time // retry delays by attempt key
	paused   map[string]time.Time // breakers open since, by scope and step
	agent    []bar                // the attempts of items, laid on lanes at the end
	lastOf   map[string]int       // the index in agent of each item's last attempt
	stepLane map[string]int
	ended    time.Time // the end of the last run, until the next event
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
	if !b.ended.IsZero() {
		if e.Time.After(b.ended) {
			b.tl.breaks = append(b.tl.breaks, span{start: b.ended, end: e.Time, title: "no run of the job for " + roughly(e.Time.Sub(b.ended))})
		}
		b.ended = time.Time{}
	}
	k := key(e)
	switch e.Type {
	case eventlog.TypeAttemptStarted:
		b.open[k] = running{start: e.Time, n: e.Int("attempt"), step: e.Str("step"), who: who(e), item: e.ItemID}
		if since, ok := b.waiting[k]; ok {
			b.tl.gaps = append(b.tl.gaps, span{after: b.last[k], start: since, end: e.Time, title: who(e) + ": retry delay"})
			delete(b.waiting, k)
		}
	case eventlog.TypeAttemptSucceeded, eventlog.TypeAttemptFailed:
		b.finish(k, e)
	case eventlog.TypeItemFailed:
		b.conflicted(e)
	case eventlog.TypeRetryDecision:
		if e.Str("action") == "retry" {
			b.waiting[k] = e.Time
		}
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

// finish draws the attempt that e, its end, finishes.
func (b *builder) finish(k string, e eventlog.Event) {
	r, ok := b.open[k]
	if !ok {
		return
	}
	delete(b.open, k)
	b.last[k] = len(b.agent) + len(b.tl.bars)
	a := bar{id: b.last[k], start: r.start, end: e.Time, class: "ok", title: fmt.Sprintf("%s, attempt %d: succeeded in %s", who(e), r.n, e.Time.Sub(r.start).Round(time.Millisecond))}
	if e.Type == eventlog.TypeAttemptFailed {
		a.class = "fail"
		if e.Str("kind") == "timeout" {
			a.class = "timeout"
		}
		a.title = fmt.Sprintf("%s, attempt %d: %s", who(e), r.n, e.Str("message"))
	}
	b.place(a, r)
}

// conflicted draws as failed the last attempt of an item whose merge
// into the job branch conflicted, e its end: the attempt succeeded, the
// item did not.
func (b *builder) conflicted(e eventlog.Event) {
	i, ok := b.lastOf[e.ItemID]
	if !ok || e.Str("kind") != "merge_conflict" {
		return
	}
	b.agent[i].class = "fail"
	b.agent[i].title += "; its merge into the job branch conflicted in " + strings.Join(strs(e.Fields["conflicts"]), ", ")
}

// place adds an attempt's bar: on its step's lane, or among the items'.
func (b *builder) place(a bar, r running) {
	if r.item != "" {
		b.lastOf[r.item] = len(b.agent)
		b.agent = append(b.agent, a)
		return
	}
	a.lane = b.laneOf(r.step)
	b.tl.bars = append(b.tl.bars, a)
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
		b.place(bar{id: len(b.agent) + len(b.tl.bars), start: r.start, end: end, class: "open", title: "still running or interrupted: " + r.who}, r)
		delete(b.open, k)
	}
}

// assignLanes puts agent attempts on the lanes after the steps' in start order, each on the
// first lane free by then: as many lanes as attempts ever ran at once,
// which is the job's max_parallel when it was busy.
func (tl *timeline) assignLanes(agent []bar) {
	slices.SortStableFunc(agent, func(a, b bar) int { return a.start.Compare(b.start) })
	if len(agent)+len(tl.bars) > maxBars {
		keep := max(maxBars-len(tl.bars), 0)
		tl.dropped = len(agent) - keep
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
	// A retry delay is drawn on the lane of the attempt that failed before it.
	lanes := map[int]int{}
	for _, b := range tl.bars {
		lanes[b.id] = b.lane
	}
	for i, g := range tl.gaps {
		tl.gaps[i].lane = lanes[g.after]
	}
}

// roughly is d rounded to what a reader wants of it: milliseconds under
// a second, seconds above.
func roughly(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
