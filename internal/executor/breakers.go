package executor

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"

	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/workflow"
)

// breakers holds each step's circuit breaker, shared by every execution
// of the step in the job.
type breakers struct {
	mu sync.Mutex
	m  map[*workflow.Step]*breaker.Breaker
}

// breaker returns the step's breaker, or nil when it has none; its
// events name the step as r's events do.
func (x *Executor) breaker(step *workflow.Step, r Run) *breaker.Breaker {
	if step.Breaker == nil {
		return nil
	}
	x.breakers.mu.Lock()
	defer x.breakers.mu.Unlock()
	if b, ok := x.breakers.m[step]; ok {
		return b
	}
	if x.breakers.m == nil {
		x.breakers.m = map[*workflow.Step]*breaker.Breaker{}
	}
	label := r.label(step)
	b := breaker.New(label, *step.Breaker, func(to string) {
		x.emit(Run{Phase: r.Phase}, eventlog.CircuitChanged(to, "step", label))
	})
	x.breakers.m[step] = b
	return b
}

// jitterSource returns the random source of one step execution.
func (x *Executor) jitterSource(step *workflow.Step, r Run) func() float64 {
	return JitterSource(x.Seed, step, r.ItemID)
}

// JitterSource returns the random source of the retry jitter of one
// execution of step in a job with seed, for the map item itemID ("" for
// other steps): derived from the seed, the step and the item, so that the
// same seed gives the same schedule whatever order parallel executions
// run in, and `run --dry-run --seed` shows the delays a run waits.
func JitterSource(seed uint64, step *workflow.Step, itemID string) func() float64 {
	h := fnv.New64a()
	h.Write([]byte(step.Key()))
	h.Write([]byte{0})
	h.Write([]byte(itemID))
	return rand.New(rand.NewPCG(seed, h.Sum64())).Float64
}
