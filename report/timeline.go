package report

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runnerdev/runner/eventlog"
)

// maxBars bounds the attempts drawn, so that a job of 100,000 items still
// gives a page a browser opens.
const maxBars = 5000

// timeline is what the report draws: attempts on lanes, the delays
// between retried attempts, and circuit-breaker pauses.
type timeline struct {
	start, end time.Time
	lanes      int // lane 0 is setup, steps and reduce; 1.. are agent slots
	bars       []bar
	gaps       []span
	pauses     []span
	dropped    int // attempts beyond maxBars
}

type bar struct {
	id         int
	lane       int
	start, end time.Time
	class      string // ok, fail, timeout, open (still running)
	title      string
}

type span struct {
	after      int // a retry delay: the id of the attempt it follows
	lane       int
	start, end time.Time
	title      string
}

// buildTimeline turns a job's events into its timeline.
func buildTimeline(events []eventlog.Event) timeline {
	var tl timeline
	if len(events) == 0 {
		return tl
	}
	tl.start, tl.end = events[0].Time, events[len(events)-1].Time
	type running struct {
		start time.Time
		n     int64
		who   string // the item and step, or the step
		item  bool   // an attempt of a map item's step
	}
	open := map[string]running{}
	last := map[string]int{}          // the id of each key's last finished attempt
	waiting := map[string]time.Time{} // retry delays by attempt key
	paused := map[string]time.Time{}  // breakers open since, by scope and step
	var agent []bar
	key := func(e eventlog.Event) string { return e.ItemID + "\x00" + e.Str("step") }
	who := func(e eventlog.Event) string {
		if item := e.ItemID; item != "" {
			return "item " + item + ", " + e.Str("step")
		}
		return e.Str("step")
	}
	for _, e := range events {
		k := key(e)
		switch e.Type {
		case eventlog.TypeAttemptStarted:
			open[k] = running{start: e.Time, n: e.Int("attempt"), who: who(e), item: e.ItemID != ""}
			if since, ok := waiting[k]; ok {
				tl.gaps = append(tl.gaps, span{after: last[k], start: since, end: e.Time, title: who(e) + ": retry delay"})
				delete(waiting, k)
			}
		case eventlog.TypeAttemptSucceeded, eventlog.TypeAttemptFailed:
			r, ok := open[k]
			if !ok {
				continue
			}
			delete(open, k)
			last[k] = len(agent) + len(tl.bars)
			b := bar{id: last[k], start: r.start, end: e.Time, class: "ok", title: fmt.Sprintf("%s, attempt %d: succeeded in %s", who(e), r.n, e.Time.Sub(r.start).Round(time.Millisecond))}
			if e.Type == eventlog.TypeAttemptFailed {
				b.class = "fail"
				if e.Str("kind") == "timeout" {
					b.class = "timeout"
				}
				b.title = fmt.Sprintf("%s, attempt %d: %s", who(e), r.n, e.Str("message"))
			}
			if e.ItemID != "" {
				agent = append(agent, b)
			} else {
				tl.bars = append(tl.bars, b)
			}
		case eventlog.TypeRetryDecision:
			if e.Str("action") == "retry" {
				waiting[k] = e.Time
			}
		case eventlog.TypeCircuitOpened:
			paused[e.Str("scope")+"\x00"+e.Str("step")] = e.Time
		case eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
			pk := e.Str("scope") + "\x00" + e.Str("step")
			if since, ok := paused[pk]; ok {
				tl.pauses = append(tl.pauses, span{start: since, end: e.Time, title: "circuit breaker open (" + e.Str("scope") + " " + e.Str("step") + ")"})
				delete(paused, pk)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(open)) { // attempts the job never finished, in a stable order
		r := open[k]
		b := bar{id: len(agent) + len(tl.bars), start: r.start, end: tl.end, class: "open", title: "still running or interrupted: " + r.who}
		if r.item {
			agent = append(agent, b)
		} else {
			tl.bars = append(tl.bars, b)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(paused)) {
		tl.pauses = append(tl.pauses, span{start: paused[k], end: tl.end, title: "circuit breaker open"})
	}
	tl.assignLanes(agent)
	return tl
}

// assignLanes puts agent attempts on lanes 1.. in start order, each on the
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
		b.lane = lane + 1
		tl.bars = append(tl.bars, b)
	}
	tl.lanes = 1 + len(laneEnd)
	// A retry delay is drawn on the lane of the attempt that failed before it.
	lanes := map[int]int{}
	for _, b := range tl.bars {
		lanes[b.id] = b.lane
	}
	for i, g := range tl.gaps {
		tl.gaps[i].lane = lanes[g.after]
	}
}
