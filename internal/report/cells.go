package report

import (
	"fmt"
	"strings"
	"time"
)

// cellsPerSlot is how many cells share a slot's lane: a cell is two to
// four pixels of the chart.
const cellsPerSlot = 512

// classes are the classes of attempts, the worst last: a cell takes the
// worst class of the attempts that ran in it.
var classes = [...]string{"ok", "open", "timeout", "fail"}

// cells are the agent attempts drawn merged, by slot and by equal spans
// of the job's running time: the attempts that started in each span, and
// the classes of those that ran in it. Their memory does not grow with
// the attempts: when the job runs past the last cell, each two cells
// become one, twice as long.
type cells struct {
	width time.Duration // of a cell; 0 until the first attempt
	slots [][]cell
}

type cell struct {
	started [len(classes)]int32 // the attempts that started in it, by class
	ran     uint8               // a bit per class of the attempts that ran in it
}

func classIndex(class string) int {
	for i, c := range classes {
		if c == class {
			return i
		}
	}
	return 0
}

// add counts an attempt of slot that ran from from to to, in the job's
// running time.
func (c *cells) add(slot int, from, to time.Duration, class string) {
	c.cover(slot, to)
	i := classIndex(class)
	c.slots[slot][c.at(from)].started[i]++
	c.mark(slot, from, to, i)
}

// reclass makes an attempt counted as class from a class to one.
func (c *cells) reclass(slot int, from, to time.Duration, was, is string) {
	cl := &c.slots[slot][c.at(from)]
	if i := classIndex(was); cl.started[i] > 0 {
		cl.started[i]--
	}
	i := classIndex(is)
	cl.started[i]++
	c.mark(slot, from, to, i)
}

func (c *cells) mark(slot int, from, to time.Duration, class int) {
	for k := c.at(from); k <= c.at(to); k++ {
		c.slots[slot][k].ran |= 1 << class
	}
}

// at is the cell of a time.
func (c *cells) at(d time.Duration) int { return min(int(d/c.width), cellsPerSlot-1) }

// cover makes the cells reach slot and time to.
func (c *cells) cover(slot int, to time.Duration) {
	if c.width == 0 {
		c.width = time.Microsecond
	}
	for len(c.slots) <= slot {
		c.slots = append(c.slots, make([]cell, cellsPerSlot))
	}
	for to >= c.width*cellsPerSlot {
		c.width *= 2
		for _, s := range c.slots {
			for k := range cellsPerSlot / 2 {
				s[k] = s[2*k].merged(s[2*k+1])
			}
			clear(s[cellsPerSlot/2:])
		}
	}
}

func (a cell) merged(b cell) cell {
	for i := range a.started {
		a.started[i] += b.started[i]
	}
	a.ran |= b.ran
	return a
}

// class is the worst class of the attempts that ran in the cell; "" for
// none.
func (a cell) class() string {
	for i := len(classes) - 1; i >= 0; i-- {
		if a.ran&(1<<i) != 0 {
			return classes[i]
		}
	}
	return ""
}

// cellRun is cells next to each other on a lane, of one class.
type cellRun struct {
	slot, from, to int // cells from..to-1 of slot
	class          string
	sum            cell
}

// runs returns the runs of cells of one class, slot by slot.
func (c *cells) runs() []cellRun {
	var out []cellRun
	for slot, s := range c.slots {
		for k := 0; k < len(s); {
			class := s[k].class()
			r := cellRun{slot: slot, from: k, class: class}
			for ; k < len(s) && s[k].class() == class; k++ {
				r.sum = r.sum.merged(s[k])
			}
			r.to = k
			if class != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// title says what the run's attempts did.
func (r cellRun) title(from, to time.Duration) string {
	var n int32
	for _, k := range r.sum.started {
		n += k
	}
	what := [...]string{"succeeded", "unfinished", "timed out", "failed"}
	var parts []string
	for i, k := range r.sum.started {
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k, what[i]))
		}
	}
	if n == 0 {
		return fmt.Sprintf("slot %d, %s to %s: attempts started before", r.slot+1, from.Round(time.Millisecond), to.Round(time.Millisecond))
	}
	return fmt.Sprintf("slot %d, %s to %s: %d attempts started (%s)", r.slot+1, from.Round(time.Millisecond), to.Round(time.Millisecond), n, strings.Join(parts, ", "))
}
