package progress

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/workflow"
)

// jobStatus is what the status line tells of a job, kept up to date from
// its events.
type jobStatus struct {
	// MapReduce
	mapping      bool
	mapStart     time.Time
	total        int
	done, failed int                  // finished items (done: in an earlier run too)
	doneBefore   int                  // items finished by earlier runs: not in this run's rate
	items        map[string]itemState // started items not finished
	inState      [itemStates]int      // how many items are in each state
	breaker      string               // "": no workflow circuit breaker
	queue        Queue                // the NATS queue the items go to; Name "": they run here
	// what this run's finished items' agents spent, for the projection
	itemsFinished int
	itemsCost     float64
	// standard
	step           string
	phase          string
	stepN          int
	steps          map[string]int // each phase's step count (SetSteps)
	attempt, limit int
	stepStart      time.Time
	// block is the parallel: block whose steps run (its label), running
	// those steps' labels, in start order; "" and nil outside one.
	block   string
	running []string

	// spent is what the job's agents have spent so far (SetSpent); nil:
	// the line says nothing of it.
	spent func() eventlog.AgentUsage
}

// Queue is what the status line shows of the NATS queue a job's items go
// to.
type Queue struct {
	Name string
	// Busy are its workers' slots running a task (of any job); Pulling
	// its workers with a free slot, each waiting for a task with one pull.
	Busy, Pulling int
	// Stranded are the job's tasks whose worker stopped answering: the
	// server delivers each again ack_wait after its last heartbeat, the
	// last of them at Redelivery. Lost names those workers.
	Stranded   int
	Lost       []string
	AckWait    time.Duration
	Redelivery time.Time
	// Unavailable names the NATS stream that does not answer, since
	// DownSince: the job waits for it; "" when they all answer.
	Unavailable string
	DownSince   time.Time
}

// slots is the queue's part of the line: "queue gpu: 3 slots busy, 1
// worker pulling", "queue gpu: 4 slots busy, no free slot" (its workers
// are all busy: none pulls), or that no worker pulls from it nor runs a
// task, or that a stream of it does not answer.
func (q Queue) slots() string {
	if q.Unavailable != "" {
		return fmt.Sprintf("queue %s: NATS stream %s unavailable for %s, waiting for it", q.Name, q.Unavailable, time.Since(q.DownSince).Round(time.Second))
	}
	switch {
	case q.Busy+q.Pulling == 0:
		return fmt.Sprintf("queue %s: no worker pulling", q.Name)
	case q.Pulling == 0:
		return fmt.Sprintf("queue %s: %s busy, no free slot", q.Name, count(q.Busy, "slot"))
	}
	return fmt.Sprintf("queue %s: %s busy, %s pulling", q.Name, count(q.Busy, "slot"), count(q.Pulling, "worker"))
}

// count is n things: "1 slot", "2 slots".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// stranded is the part of the line of n tasks whose worker stopped
// answering: "2 waiting for redelivery (worker w1 lost, ack_wait 30s)".
func (q Queue) stranded(n int) string {
	who := "worker "
	if len(q.Lost) > 1 {
		who = "workers "
	}
	return fmt.Sprintf("%d waiting for redelivery (%s%s lost, ack_wait %s)", n, who, strings.Join(q.Lost, ", "), q.AckWait)
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

// InPhase is a step's label as lines show it, its phase before it when
// the label does not say it ("setup build", "setup step 1"); a standard
// workflow's steps as they are.
func InPhase(phase, label string) string {
	if phase == "" || phase == workflow.PhaseCommands || strings.HasPrefix(label, phase+" ") {
		return label
	}
	return phase + " " + label
}

// line is the status in one line; "" when there is nothing to show.
func (j *jobStatus) line() string {
	if j.mapping {
		finished := j.done + j.failed
		parts := []string{fmt.Sprintf("map %d/%d done", finished, j.total)}
		if j.failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", j.failed))
		}
		stranded := min(j.queue.Stranded, j.inState[itemRunning])
		parts = append(parts, fmt.Sprintf("%d running", j.inState[itemRunning]-stranded))
		if stranded > 0 {
			parts = append(parts, j.queue.stranded(stranded))
		}
		for _, w := range []struct {
			state itemState
			what  string
		}{{itemRetrying, "retrying"}, {itemPolling, "polling"}} {
			if n := j.inState[w.state]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, w.what))
			}
		}
		parts = append(parts, fmt.Sprintf("%d pending", max(j.total-finished-len(j.items), 0)))
		if elapsed, now := time.Since(j.mapStart), finished-j.doneBefore; elapsed > time.Second && now > 0 {
			rate := float64(now) / elapsed.Seconds() // this run's: earlier runs' items took no time of it
			parts = append(parts, fmt.Sprintf("%.1f/s", rate))
			if left := j.total - finished; left > 0 {
				eta := time.Duration(float64(left) / rate * float64(time.Second))
				if stranded > 0 {
					eta = max(eta, time.Until(j.queue.Redelivery)) // nothing ends before they are delivered again
				}
				parts = append(parts, "ETA "+eta.Round(time.Second).String())
			}
		}
		if spend := j.spend(); spend != "" {
			parts = append(parts, spend)
		}
		if j.breaker != "" {
			parts = append(parts, "breaker "+strings.ReplaceAll(j.breaker, "_", "-"))
		}
		if j.queue.Name != "" {
			parts = append(parts, j.queue.slots())
		}
		return strings.Join(parts, " · ")
	}
	if j.block != "" {
		return fmt.Sprintf("%s · running %s · %s", j.block, strings.Join(j.running, ", "), time.Since(j.stepStart).Round(time.Second))
	}
	if j.step == "" {
		return ""
	}
	s := fmt.Sprintf("step %d/%d", j.stepN, j.steps[j.phase])
	if j.phase != "" && j.phase != workflow.PhaseCommands {
		s = j.phase + " " + s
	}
	if label := (&workflow.Step{Index: j.stepN - 1}).Label(j.phase); j.step != label {
		s += " " + j.step // named: the position alone would not say which
	}
	if j.attempt > 1 || j.limit > 0 {
		s += fmt.Sprintf(" · attempt %d", j.attempt)
		if j.limit > 0 {
			s += fmt.Sprintf("/%d", j.limit)
		}
	}
	s += " · " + time.Since(j.stepStart).Round(time.Second).String()
	if spend := j.spend(); spend != "" {
		s += " · " + spend
	}
	return s
}

// spend is the line's part of what the agents spent: "$4.10 so far"
// (those that ended and the last figures of those running), and in the
// map "~$38 for all 400 items at this rate" (the mean of this run's
// finished items times the map's items); "" before any agent reported
// a cost.
func (j *jobStatus) spend() string {
	if j.spent == nil {
		return ""
	}
	usd := j.spent().CostUSD
	if usd <= 0 {
		return ""
	}
	s := eventlog.CostText(usd) + " so far"
	if j.mapping && j.itemsFinished > 0 && j.itemsCost > 0 {
		mean := j.itemsCost / float64(j.itemsFinished)
		s += fmt.Sprintf(", ~%s for all %d items at this rate", roughCost(mean*float64(j.total)), j.total)
	}
	return s
}

// roughCost is a projected cost: to the dollar from $10 ("$38"), else
// to the cent.
func roughCost(usd float64) string {
	if usd >= 10 {
		return fmt.Sprintf("$%.0f", usd)
	}
	return eventlog.CostText(usd)
}

// observe updates the status from an event.
func (j *jobStatus) observe(e eventlog.Event) {
	item := e.ItemID
	if item == "" && j.step != "" && strings.HasPrefix(e.Str("step"), j.step+"[") {
		return // a step inside the running one (a foreach's do): the line stays the loop's
	}
	if block := e.Str("parallel"); item == "" && block != "" {
		j.observeBlock(block, e)
		return
	}
	switch e.Type {
	case eventlog.TypeMapStarted:
		j.mapping, j.mapStart = true, time.Now()
		j.total = int(e.Int("total"))
		j.done = j.total - int(e.Int("pending")) // finished in an earlier run
		j.doneBefore = j.done
		j.itemsFinished, j.itemsCost = 0, 0
	case eventlog.TypeMapCompleted:
		j.mapping = false
	case eventlog.TypeItemStarted: // every attempt of the item, once it holds a slot
		j.move(item, itemRunning)
	case eventlog.TypeItemSucceeded:
		j.finish(item)
		j.done++
		j.itemSpent(e)
	case eventlog.TypeItemFailed:
		j.finish(item)
		j.failed++
		j.itemSpent(e)
	case eventlog.TypeAttemptStarted:
		if _, started := j.items[item]; started {
			j.move(item, itemRunning) // it took a slot again
		}
		if item == "" {
			j.attempt = int(e.Int("attempt"))
		}
	case eventlog.TypeRetryDecision:
		if _, started := j.items[item]; started && e.Str("action") == "retry" {
			j.move(item, itemRetrying)
		}
		if item == "" {
			j.limit = int(e.Int("limit"))
		}
	case eventlog.TypeItemRetrying:
		j.move(item, itemRetrying)
	case eventlog.TypeStepRepeat:
		if _, started := j.items[item]; started {
			j.move(item, itemPolling)
		}
	case eventlog.TypeCircuitOpened, eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
		if e.Str("scope") == "workflow" {
			j.breaker = strings.TrimPrefix(string(e.Type), "circuit_")
			if j.breaker == "opened" {
				j.breaker = "open"
			}
		}
	case eventlog.TypeStepStarted:
		if item == "" {
			j.step, j.phase, j.stepN, j.stepStart = e.Str("step"), e.Str("phase"), int(e.Int("index")), time.Now()
			if j.phase == "" {
				j.phase = workflow.PhaseCommands // an event of an earlier runner
			}
			j.attempt, j.limit = 1, 0
		}
	case eventlog.TypeStepCompleted, eventlog.TypeStepFailed, eventlog.TypeStepSkipped:
		if item == "" {
			j.step = ""
		}
	}
}

// itemSpent counts a finished item's spend (none when its agents
// reported none) into the mean the projection uses.
func (j *jobStatus) itemSpent(e eventlog.Event) {
	j.itemsFinished++
	if u, ok := e.ItemUsage(); ok {
		j.itemsCost += u.CostUSD
	}
}

// observeBlock updates the status from an event of a step of the
// parallel: block: the line names the block and its running steps.
func (j *jobStatus) observeBlock(block string, e eventlog.Event) {
	if j.block != block {
		j.block, j.running, j.step, j.stepStart = block, nil, "", time.Now()
	}
	switch step := e.Str("step"); e.Type {
	case eventlog.TypeStepStarted:
		j.running = append(j.running, step)
	case eventlog.TypeStepCompleted, eventlog.TypeStepFailed, eventlog.TypeStepSkipped:
		if j.running = slices.DeleteFunc(j.running, func(s string) bool { return s == step }); len(j.running) == 0 {
			j.block = ""
		}
	}
}

// move records that a started item is now in state to.
func (j *jobStatus) move(item string, to itemState) {
	j.finish(item)
	j.items[item] = to
	j.inState[to]++
}

// finish forgets a started item.
func (j *jobStatus) finish(item string) {
	if from, ok := j.items[item]; ok {
		j.inState[from]--
		delete(j.items, item)
	}
}
