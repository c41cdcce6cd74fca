package report

import (
	"strconv"
	"time"
)

// breakWidth is the width, in pixels, of the time between two runs of a
// job: drawn as a break of its own, whatever its length, so that a job
// resumed a day later is not squeezed into slivers.
const breakWidth = 40

// scale maps a time of the job to an x in the chart: the runs of the job
// share the chart's width in proportion to their lengths, each break
// between two runs taking breakWidth.
type scale struct {
	runs    []run
	pxPerNS float64
}

// run is a run of the job, from its first event to its last, whose
// drawing starts at x.
type run struct {
	from, to time.Time
	x        float64
}

func newScale(tl timeline, left, width int) scale {
	var s scale
	from := tl.start
	for _, b := range tl.breaks {
		s.runs = append(s.runs, run{from: from, to: b.start})
		from = b.end
	}
	s.runs = append(s.runs, run{from: from, to: tl.end})
	active := s.active()
	if active <= 0 {
		active = time.Millisecond
	}
	s.pxPerNS = float64(width-breakWidth*len(tl.breaks)) / float64(active)
	x := float64(left)
	for i := range s.runs {
		s.runs[i].x = x
		x += float64(s.runs[i].to.Sub(s.runs[i].from))*s.pxPerNS + breakWidth
	}
	return s
}

// active is the time the job ran: its runs' lengths, without the breaks.
func (s scale) active() time.Duration {
	var d time.Duration
	for _, r := range s.runs {
		d += r.to.Sub(r.from)
	}
	return d
}

// x is where t is drawn: in its run, or in the break it falls in.
func (s scale) x(t time.Time) int {
	i := len(s.runs) - 1
	for i > 0 && t.Before(s.runs[i].from) {
		i--
	}
	r := s.runs[i]
	if !t.After(r.to) || i == len(s.runs)-1 {
		if t.After(r.to) {
			t = r.to
		}
		return int(r.x + float64(max(t.Sub(r.from), 0))*s.pxPerNS)
	}
	end := r.x + float64(r.to.Sub(r.from))*s.pxPerNS
	next := s.runs[i+1].from
	return int(end + float64(t.Sub(r.to))/float64(next.Sub(r.to))*breakWidth)
}

// at is the time after d of the job's running (breaks not counted).
func (s scale) at(d time.Duration) time.Time {
	for _, r := range s.runs {
		length := r.to.Sub(r.from)
		if d <= length {
			return r.from.Add(d)
		}
		d -= length
	}
	return s.runs[len(s.runs)-1].to
}

// maxTicks is how many steps of the time axis fit its width at most.
const maxTicks = 6

// ticks returns the axis's marks for a job that ran for active: round
// values of one unit (ms, s, min or h) — 1, 2 or 5 times a power of ten
// of it — from zero, as many as fit in maxTicks steps, each with its
// label. The unit is the largest whose third is at most a sixth of
// active.
func ticks(active time.Duration) (at []time.Duration, labels []string) {
	units := []struct {
		size time.Duration
		name string
	}{{time.Millisecond, "ms"}, {time.Second, "s"}, {time.Minute, "min"}, {time.Hour, "h"}}
	raw := max(active/maxTicks, time.Millisecond)
	u := units[0]
	for _, next := range units[1:] {
		if raw >= next.size/3 { // 20 s steps become 1 min ones: 0, 1 min, 2 min, not 0, 50 s, 100 s
			u = next
		}
	}
	step := u.size * roundStep(float64(raw)/float64(u.size))
	for d := time.Duration(0); d <= active; d += step {
		at = append(at, d)
		labels = append(labels, strconv.FormatInt(int64(d/u.size), 10)+" "+u.name)
	}
	labels[0] = "0"
	return at, labels
}

// roundStep is the least of 1, 2 and 5 times a power of ten that is at
// least x (x >= 1).
func roundStep(x float64) time.Duration {
	for p := time.Duration(1); ; p *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if float64(m*p) >= x {
				return m * p
			}
		}
	}
}
