package progress

import (
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// retry is a failed attempt of an item's command that will run again.
func retry(item string) eventlog.Event {
	return eventlog.RetryDecision("s", eventlog.Decision{Attempt: 1, Action: "retry", Delay: 10 * time.Millisecond}).WithItem(item)
}

// started is the start of an item's attempt, which holds a slot.
func started(item string) eventlog.Event { return eventlog.ItemStarted(item, 0, 1, false) }

// The map status counts only the items that hold a max_parallel slot as
// running: an item waiting out a delay has given its slot back, and the
// next item takes it. Fed the events of a map of 3 items at max_parallel
// 2, the line never shows more than 2 running.
func TestItemsWaitingOutADelayAreNotRunning(t *testing.T) {
	mapOf3 := eventlog.MapStarted(3, 3, 2, "none")
	for _, tc := range []struct {
		name   string
		events []eventlog.Event
		want   string
	}{
		{"both slots taken", []eventlog.Event{mapOf3, started("a"), started("b")},
			"map 0/3 done · 2 running · 1 pending"},
		{"a command-level retry gives the slot back", []eventlog.Event{mapOf3, started("a"), started("b"), retry("a")},
			"map 0/3 done · 1 running · 1 retrying · 1 pending"},
		{"a stop decision keeps the slot until the item fails",
			[]eventlog.Event{mapOf3, started("a"), eventlog.RetryDecision("s", eventlog.Decision{Action: "stop"}).WithItem("a")},
			"map 0/3 done · 1 running · 2 pending"},
		{"an item-level retry gives the slot back",
			[]eventlog.Event{mapOf3, started("a"), started("b"), eventlog.ItemRetrying("a", eventlog.Failure{Step: "s", Attempt: 1}, time.Second)},
			"map 0/3 done · 1 running · 1 retrying · 1 pending"},
		{"a repeat interval gives the slot back",
			[]eventlog.Event{mapOf3, started("a"), started("b"), eventlog.StepRepeat("s", 1, time.Second).WithItem("b")},
			"map 0/3 done · 1 running · 1 polling · 1 pending"},
		{"the next item takes the slot given back",
			[]eventlog.Event{mapOf3, started("a"), started("b"), retry("a"), started("c")},
			"map 0/3 done · 2 running · 1 retrying · 0 pending"},
		{"the item waiting takes a slot again for its next attempt",
			[]eventlog.Event{mapOf3, started("a"), started("b"), retry("a"), started("c"),
				eventlog.ItemSucceeded("c", 1, time.Second), eventlog.AttemptStarted("s", 2).WithItem("a")},
			"map 1/3 done · 2 running · 0 pending"},
		{"an attempt of an item not started is not counted",
			[]eventlog.Event{mapOf3, eventlog.AttemptStarted("s", 1).WithItem("a"), eventlog.StepRepeat("s", 1, time.Second).WithItem("a")},
			"map 0/3 done · 0 running · 3 pending"},
		{"finished items leave their state",
			[]eventlog.Event{mapOf3, started("a"), started("b"), retry("a"),
				eventlog.ItemFailed("a", eventlog.Failure{Step: "s"}, "dlq", "a"), eventlog.ItemSucceeded("b", 1, time.Second)},
			"map 2/3 done · 1 failed · 0 running · 1 pending"},
		{"items finished in an earlier run are done", []eventlog.Event{eventlog.MapStarted(5, 2, 2, "none"), started("d")},
			"map 3/5 done · 1 running · 1 pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bubble's clock stands still: no rate or ETA joins the line.
			synctest.Test(t, func(t *testing.T) {
				j := jobStatus{items: map[string]itemState{}}
				for _, e := range tc.events {
					j.observe(e)
				}
				if got := j.line(); got != tc.want {
					t.Errorf("got  %q\nwant %q", got, tc.want)
				}
			})
		})
	}
}

// Once items finish, the line tells the rate and the time left at that
// rate.
func TestMapStatusShowsRateAndETA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}}
		j.observe(eventlog.MapStarted(4, 4, 1, "none"))
		j.observe(started("a"))
		time.Sleep(2 * time.Second)
		j.observe(eventlog.ItemSucceeded("a", 1, 2*time.Second))
		if got, want := j.line(), "map 1/4 done · 0 running · 3 pending · 0.5/s · ETA 6s"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// Items that go to NATS workers: the line tells the busy slots of their
// queue's workers apart from the workers pulling, so that a queue no
// worker serves shows, and one whose every slot is busy does not look
// like it.
func TestMapStatusShowsTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(io.Discard, io.Discard, "never", true, false)
		defer d.Close()
		d.Observe(eventlog.MapStarted(2, 2, 2, "none"))
		d.SetQueue(Queue{Name: "gpu"})
		if got, want := d.job.line(), "map 0/2 done · 0 running · 2 pending · queue gpu: no worker pulling"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
		d.SetQueue(Queue{Name: "gpu", Busy: 4})
		if got := d.job.line(); !strings.HasSuffix(got, "queue gpu: 4 slots busy, no free slot") {
			t.Errorf("every slot busy: got %q", got)
		}
		d.SetQueue(Queue{Name: "gpu", Busy: 1, Pulling: 1})
		if got := d.job.line(); !strings.HasSuffix(got, "queue gpu: 1 slot busy, 1 worker pulling") {
			t.Errorf("got %q", got)
		}
	})
}

// Tasks whose worker died wait for the server to deliver them again: the
// line says so, and which worker was lost, instead of counting them as
// running; the time left is at least the wait for that redelivery.
func TestMapStatusShowsTasksWaitingForRedelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}}
		j.observe(eventlog.MapStarted(4, 4, 4, "none"))
		for _, id := range []string{"a", "b", "c", "d"} {
			j.observe(started(id))
		}
		time.Sleep(2 * time.Second)
		j.observe(eventlog.ItemSucceeded("a", 1, 2*time.Second))
		j.observe(eventlog.ItemSucceeded("b", 1, 2*time.Second))
		j.queue = Queue{Name: "q", Busy: 0, Pulling: 2, Stranded: 2, Lost: []string{"w1"}, AckWait: 30 * time.Second, Redelivery: time.Now().Add(25 * time.Second)}
		want := "map 2/4 done · 0 running · 2 waiting for redelivery (worker w1 lost, ack_wait 30s) · 0 pending · 1.0/s · ETA 25s · queue q: 0 slots busy, 2 workers pulling"
		if got := j.line(); got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
		j.queue.Lost, j.queue.Stranded = []string{"w1", "w2"}, 1
		if got := j.line(); !strings.Contains(got, "· 1 running · 1 waiting for redelivery (workers w1, w2 lost, ack_wait 30s) ·") {
			t.Errorf("got %q", got)
		}
	})
}

// A stream of the queue that does not answer shows in place of its
// slots, with how long the job has waited for it.
func TestMapStatusShowsAnUnavailableStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}}
		j.observe(eventlog.MapStarted(2, 2, 2, "none"))
		j.queue = Queue{Name: "q", Busy: 2, Unavailable: "RUNNER_TASKS", DownSince: time.Now()}
		time.Sleep(12 * time.Second)
		if got, want := j.line(), "queue q: NATS stream RUNNER_TASKS unavailable for 12s, waiting for it"; !strings.HasSuffix(got, want) {
			t.Errorf("got  %q\nwant it to end with %q", got, want)
		}
	})
}

// A standard workflow's line names the step, its attempt once it is
// retried, and how long the step has run; nothing between steps.
func TestStepStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}, steps: map[string]int{"commands": 2}}
		j.observe(eventlog.StepStarted("build", 1, "make"))
		j.observe(eventlog.AttemptStarted("build", 1))
		if got, want := j.line(), "step 1/2 build · 0s"; got != want {
			t.Errorf("first attempt: got %q, want %q", got, want)
		}
		time.Sleep(3 * time.Second)
		j.observe(eventlog.RetryDecision("build", eventlog.Decision{Attempt: 1, Action: "retry", Limit: 3}))
		j.observe(eventlog.AttemptStarted("build", 2))
		if got, want := j.line(), "step 1/2 build · attempt 2/3 · 3s"; got != want {
			t.Errorf("second attempt: got %q, want %q", got, want)
		}
		j.observe(eventlog.StepCompleted("build", 0, 3*time.Second))
		if got := j.line(); got != "" {
			t.Errorf("between steps: got %q, want nothing", got)
		}
	})
}

// A MapReduce's setup and reduce steps count in their own phase, which
// the line names: "setup step 1/2", not "step 1/0"; an unnamed step is
// not named twice.
func TestStepStatusPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}, steps: map[string]int{"setup": 2, "map": 1, "reduce": 1}}
		j.observe(eventlog.StepStarted("setup step 1", 1, "make").WithPhase("setup"))
		if got, want := j.line(), "setup step 1/2 · 0s"; got != want {
			t.Errorf("unnamed setup step: got %q, want %q", got, want)
		}
		j.observe(eventlog.StepStarted("fetch", 2, "make").WithPhase("setup"))
		if got, want := j.line(), "setup step 2/2 fetch · 0s"; got != want {
			t.Errorf("named setup step: got %q, want %q", got, want)
		}
		j.observe(eventlog.StepStarted("reduce step 1", 1, "make").WithPhase("reduce"))
		if got, want := j.line(), "reduce step 1/1 · 0s"; got != want {
			t.Errorf("reduce step: got %q, want %q", got, want)
		}
	})
}

// While a foreach runs, the line stays the loop's: the events of its do
// steps (loop[0].step 1) neither replace it nor end it.
func TestStepStatusForeach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}, steps: map[string]int{"commands": 3}}
		j.observe(eventlog.StepStarted("loop", 2, "foreach: [a, b]"))
		j.observe(eventlog.AttemptStarted("loop", 1))
		j.observe(eventlog.StepStarted("loop[0].step 1", 1, "make"))
		j.observe(eventlog.AttemptStarted("loop[0].step 1", 1))
		j.observe(eventlog.RetryDecision("loop[0].step 1", eventlog.Decision{Attempt: 1, Action: "retry", Limit: 3}))
		j.observe(eventlog.AttemptStarted("loop[0].step 1", 2))
		j.observe(eventlog.StepCompleted("loop[0].step 1", 0, time.Second))
		if got, want := j.line(), "step 2/3 loop · 0s"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// An event read back from a log (its numbers json.Number) counts as the
// one just emitted (its numbers int).
func TestEventReadBackCountsTheSame(t *testing.T) {
	line, err := eventlog.MapStarted(5, 2, 1, "none").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var e eventlog.Event
	if err := e.UnmarshalJSON(line); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}}
		j.observe(e)
		if got, want := j.line(), "map 3/5 done · 0 running · 2 pending"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// After a resume, the rate and the time left count only the items this
// run finished: 6 of 10 finished in an earlier run, this run finished 2
// in 4 s, so 0.5/s and 4 s for the 2 left (not 8 items in 4 s, 2.0/s).
func TestRateAfterResumeCountsThisRunOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}}
		// The earlier run: its map started with all 10 to run.
		j.observe(eventlog.MapStarted(10, 10, 2, "none"))
		// This run: 4 left.
		j.observe(eventlog.MapStarted(10, 4, 2, "none"))
		j.observe(started("g"))
		j.observe(started("h"))
		time.Sleep(4 * time.Second)
		j.observe(eventlog.ItemSucceeded("g", 1, 4*time.Second))
		j.observe(eventlog.ItemSucceeded("h", 1, 4*time.Second))
		if got, want := j.line(), "map 8/10 done · 0 running · 2 pending · 0.5/s · ETA 4s"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// While a parallel: block runs, the line names the block and its running
// steps, however their events interleave; it ends with the block's last
// step.
func TestStepStatusParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := jobStatus{items: map[string]itemState{}, steps: map[string]int{"commands": 4}}
		in := func(e eventlog.Event) eventlog.Event { return e.WithPhase("commands").InParallel("parallel steps 1-3") }
		j.observe(in(eventlog.StepStarted("build", 1, "make")))
		j.observe(in(eventlog.StepStarted("vet", 2, "go vet")))
		if got, want := j.line(), "parallel steps 1-3 · running build, vet · 0s"; got != want {
			t.Errorf("two running: got %q, want %q", got, want)
		}
		j.observe(in(eventlog.StepCompleted("build", 0, 0)))
		j.observe(in(eventlog.StepStarted("lint", 3, "lint")))
		if got, want := j.line(), "parallel steps 1-3 · running vet, lint · 0s"; got != want {
			t.Errorf("one ended, one more: got %q, want %q", got, want)
		}
		j.observe(in(eventlog.StepFailed("vet", "exit 1")))
		j.observe(in(eventlog.StepCompleted("lint", 0, 0)))
		if got := j.line(); got != "" {
			t.Errorf("after the block: %q", got)
		}
		j.observe(eventlog.StepStarted("test", 4, "go test").WithPhase("commands"))
		if got, want := j.line(), "step 4/4 test · 0s"; got != want {
			t.Errorf("after the block: got %q, want %q", got, want)
		}
	})
}

// Once an agent reported a cost the line says what the job's agents
// spent so far (those running included, as the job counts them) and, in
// the map, what all its items would cost at the mean of the items
// finished in this run, an item whose agents reported nothing counting
// as free.
func TestStatusShowsSpend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spent := 0.0
		j := jobStatus{items: map[string]itemState{}, spent: func() eventlog.AgentUsage { return eventlog.AgentUsage{CostUSD: spent} }}
		j.observe(eventlog.StepStarted("plan", 1, "claude"))
		j.steps = map[string]int{"commands": 1}
		if got, want := j.line(), "step 1/1 plan · 0s"; got != want {
			t.Errorf("nothing spent: got %q, want %q", got, want)
		}
		spent = 0.42
		if got, want := j.line(), "step 1/1 plan · 0s · $0.42 so far"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
		j.observe(eventlog.StepCompleted("plan", 0, time.Second))

		j.observe(eventlog.MapStarted(400, 400, 4, "none"))
		j.observe(started("a"))
		j.observe(started("b"))
		j.observe(started("c"))
		if got, want := j.line(), "map 0/400 done · 3 running · 397 pending · $0.42 so far"; got != want {
			t.Errorf("no item finished: got  %q\nwant %q", got, want)
		}
		j.observe(eventlog.ItemSucceeded("a", 1, time.Second).WithUsage(&eventlog.AgentUsage{CostUSD: 0.12}))
		j.observe(eventlog.ItemFailed("b", eventlog.Failure{Step: "s"}, "dlq", "b").WithUsage(&eventlog.AgentUsage{CostUSD: 0.06}))
		j.observe(eventlog.ItemSucceeded("c", 1, time.Second)) // its agent reported nothing
		spent = 4.1
		if got, want := j.line(), "map 3/400 done · 1 failed · 0 running · 397 pending · $4.10 so far, ~$24 for all 400 items at this rate"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}
