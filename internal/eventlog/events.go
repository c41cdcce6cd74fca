package eventlog

import (
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"
)

// The constructors below are the one place each event's fields are named:
// the events a job writes are built here, so that every writer of a type
// writes the same fields with the same value types.

// newEvent is an event of type t with the given fields; ItemID mirrors
// the "item_id" field.
func newEvent(t Type, fields map[string]any) Event {
	id, _ := fields["item_id"].(string)
	return Event{Type: t, ItemID: id, Fields: fields}
}

// WithItem returns e told of item id, as the step events of a map agent
// are.
func (e Event) WithItem(id string) Event {
	fields := make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		fields[k] = v
	}
	fields["item_id"] = id
	e.Fields, e.ItemID = fields, id
	return e
}

// Within returns e told of a step that runs inside step parent (a
// foreach's do step for one item, "fmt[2]"): its step becomes
// "PARENT.STEP".
func (e Event) Within(parent string) Event {
	step, ok := e.Fields["step"].(string)
	if !ok {
		return e
	}
	fields := make(map[string]any, len(e.Fields))
	for k, v := range e.Fields {
		fields[k] = v
	}
	fields["step"] = parent + "." + step
	e.Fields = fields
	return e
}

// WithPhase returns e told of the workflow phase its step is of (setup,
// map, reduce, merge, commands) as "phase"; e itself when it names no
// step or phase is "".
func (e Event) WithPhase(phase string) Event {
	if _, ok := e.Fields["step"]; !ok || phase == "" {
		return e
	}
	return e.with(map[string]any{"phase": phase})
}

// InParallel returns e, an event of a step, told of the parallel: block
// the step runs in (its parallel field, the block's label); e itself
// when block is "" or e names no step.
func (e Event) InParallel(block string) Event {
	if _, ok := e.Fields["step"]; !ok || block == "" {
		return e
	}
	return e.with(map[string]any{"parallel": block})
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// JobStarted is the first event of a job.
func JobStarted(seed uint64, workflow, file, mode string, pid int) Event {
	return newEvent(TypeJobStarted, map[string]any{"seed": seed, "workflow": workflow, "file": file, "mode": mode, "pid": pid})
}

// JobResumed starts a further run of a job; resumed counts the runs after
// the first.
func JobResumed(pid, resumed int) Event {
	return newEvent(TypeJobResumed, map[string]any{"pid": pid, "resumed": resumed})
}

// JobChanged records what resume changed in a job: file is the workflow
// file it goes on with ("" when unchanged) and kept the name of the copy
// it replaces, kept in the job dir; set names the variables --set gave a
// new value (their values are not recorded: some may be secrets).
func JobChanged(file, kept string, set []string) Event {
	fields := map[string]any{}
	if file != "" {
		fields["file"], fields["kept"] = file, kept
	}
	if len(set) > 0 {
		fields["set"] = set
	}
	return newEvent(TypeJobChanged, fields)
}

// WithBudget adds to a job_changed event the budget in USD that resume
// gave the job (--budget-usd).
func (e Event) WithBudget(usd float64) Event {
	return e.with(map[string]any{"budget_usd": usd})
}

// JobFinished ends a run of a job with status ("completed", "failed",
// "stopped" or "interrupted"), which picks its type; extra holds the
// summary fields of the job's kind.
func JobFinished(status string, exitCode int, d time.Duration, err error, extra map[string]any) Event {
	fields := make(map[string]any, len(extra)+4)
	for k, v := range extra {
		fields[k] = v
	}
	fields["status"], fields["exit_code"], fields["duration_ms"] = status, exitCode, ms(d)
	if err != nil {
		fields["error"] = err.Error()
	}
	return newEvent(jobEnds[status], fields)
}

// StepStarted: step (numbered from 1 by index) runs command.
func StepStarted(step string, index int, command string) Event {
	return newEvent(TypeStepStarted, map[string]any{"step": step, "index": index, "command": command})
}

// StepCompleted: step succeeded with exitCode after d.
func StepCompleted(step string, exitCode int, d time.Duration) Event {
	return newEvent(TypeStepCompleted, map[string]any{"step": step, "exit_code": exitCode, "duration_ms": ms(d)})
}

// StepCompletedByFallback: step failed and its on_failure fallback
// succeeded in its place.
func StepCompletedByFallback(step string) Event {
	return newEvent(TypeStepCompleted, map[string]any{"step": step, "fallback": true, "exit_code": 0})
}

// StepFailed: step failed before its command ran (its when: condition
// could not be evaluated).
func StepFailed(step, message string) Event {
	return newEvent(TypeStepFailed, map[string]any{"step": step, "error": message})
}

// StepCommandFailed: step's command failed for good with exitCode;
// handled names the on_failure action that takes over ("" for none).
func StepCommandFailed(step, message string, exitCode int, handled string) Event {
	fields := map[string]any{"step": step, "error": message, "exit_code": exitCode}
	if handled != "" {
		fields["handled"] = handled
	}
	return newEvent(TypeStepFailed, fields)
}

// AgentUsage is what one run of an agent spent: its tokens (cache reads
// and writes apart), its cost in USD and turns as the agent reported
// them, the time it spent in the model's API, and which session and
// model.
// Its JSON (job metadata, map results, the item seam) has the fields of
// its agent_usage event and "tokens", their sum (Tokens).
type AgentUsage struct {
	InputTokens      int64         `json:"input_tokens"`
	OutputTokens     int64         `json:"output_tokens"`
	CacheReadTokens  int64         `json:"cache_read_tokens"`
	CacheWriteTokens int64         `json:"cache_write_tokens"`
	CostUSD          float64       `json:"cost_usd"`
	Turns            int           `json:"turns"`
	APITime          time.Duration `json:"-"` // api_ms
	SessionID        string        `json:"session_id,omitempty"`
	Model            string        `json:"model,omitempty"`
}

// usageFields is AgentUsage without its JSON methods.
type usageFields AgentUsage

// MarshalJSON writes u's fields, its API time as api_ms, and its Tokens.
func (u AgentUsage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		usageFields
		APIMS  int64 `json:"api_ms"`
		Tokens int64 `json:"tokens"`
	}{usageFields(u), u.APITime.Milliseconds(), u.Tokens()})
}

// UnmarshalJSON reads what MarshalJSON writes (tokens is worked out).
func (u *AgentUsage) UnmarshalJSON(data []byte) error {
	v := struct {
		*usageFields
		APIMS int64 `json:"api_ms"`
	}{usageFields: (*usageFields)(u)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	u.APITime = time.Duration(v.APIMS) * time.Millisecond
	return nil
}

// Usage is what an agent_usage event says its agent spent; false for
// another event.
func (e Event) Usage() (AgentUsage, bool) {
	if e.Type != TypeAgentUsage {
		return AgentUsage{}, false
	}
	return e.usage(), true
}

// ItemUsage is what an item's agents spent as its item_succeeded or
// item_failed event says (WithUsage); false when it says nothing.
func (e Event) ItemUsage() (AgentUsage, bool) {
	if (e.Type != TypeItemSucceeded && e.Type != TypeItemFailed) || e.Fields["cost_usd"] == nil {
		return AgentUsage{}, false
	}
	return e.usage(), true
}

// usage reads the fields of an AgentUsage.
func (e Event) usage() AgentUsage {
	return AgentUsage{
		InputTokens: e.Int("input_tokens"), OutputTokens: e.Int("output_tokens"),
		CacheReadTokens: e.Int("cache_read_tokens"), CacheWriteTokens: e.Int("cache_write_tokens"),
		CostUSD: e.Float("cost_usd"), Turns: int(e.Int("turns")), APITime: time.Duration(e.Int("api_ms")) * time.Millisecond,
		SessionID: e.Str("session_id"), Model: e.Str("model"),
	}
}

// Tokens is all the tokens u counts: input, output, cache reads and
// cache writes, each of which the model's provider bills.
func (u AgentUsage) Tokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Add is what u and v spent together: their tokens, cost (to the
// millionth of a dollar, which a sum of floats would not keep), turns and
// API time summed; the session and model are v's where v names them (the
// later run's).
func (u AgentUsage) Add(v AgentUsage) AgentUsage {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.CostUSD = math.Round((u.CostUSD+v.CostUSD)*1e6) / 1e6
	u.Turns += v.Turns
	u.APITime += v.APITime
	if v.SessionID != "" {
		u.SessionID = v.SessionID
	}
	if v.Model != "" {
		u.Model = v.Model
	}
	return u
}

// AddUsage is what a and b spent together (Add); nil when neither is
// known, the one known when only one is.
func AddUsage(a, b *AgentUsage) *AgentUsage {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	sum := a.Add(*b)
	return &sum
}

// AgentUsageOf: the agent that step's attempt ran spent u.
func AgentUsageOf(step string, attempt int, u AgentUsage) Event {
	return usageEvent(TypeAgentUsage, step, attempt, u)
}

// AgentProgress: the agent that step's attempt runs has spent u so far.
func AgentProgress(step string, attempt int, u AgentUsage) Event {
	return usageEvent(TypeAgentProgress, step, attempt, u)
}

// usageEvent is an event of type t of what the agent of step's attempt
// spent.
func usageEvent(t Type, step string, attempt int, u AgentUsage) Event {
	fields := u.fields()
	fields["step"], fields["attempt"] = step, attempt
	return newEvent(t, fields)
}

// fields are u as an event's fields.
func (u AgentUsage) fields() map[string]any {
	fields := map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens,
		"cost_usd": u.CostUSD, "turns": u.Turns, "api_ms": u.APITime.Milliseconds(),
	}
	if u.SessionID != "" {
		fields["session_id"] = u.SessionID
	}
	if u.Model != "" {
		fields["model"] = u.Model
	}
	return fields
}

// WithUsage adds what an item's agents spent to its item_succeeded or
// item_failed event: the fields of agent_usage (but the session and
// model, which are its last step's) and tokens, their sum. A nil u (no
// agent reported any) adds nothing.
func (e Event) WithUsage(u *AgentUsage) Event {
	if u == nil {
		return e
	}
	fields := u.fields()
	delete(fields, "session_id")
	delete(fields, "model")
	fields["tokens"] = u.Tokens()
	return e.with(fields)
}

// StepSkipped: step did not run, for reason.
func StepSkipped(step, reason string) Event {
	return newEvent(TypeStepSkipped, map[string]any{"step": step, "reason": reason})
}

// StepRepeat: step's repeat condition is not met after run runs; the next
// run starts after delay.
func StepRepeat(step string, run int, delay time.Duration) Event {
	return newEvent(TypeStepRepeat, map[string]any{"step": step, "run": run, "delay_ms": ms(delay)})
}

// AttemptStarted: attempt (from 1) of step's command starts.
func AttemptStarted(step string, attempt int) Event {
	return newEvent(TypeAttemptStarted, map[string]any{"step": step, "attempt": attempt})
}

// AttemptSucceeded: attempt of step's command succeeded after d.
func AttemptSucceeded(step string, attempt int, d time.Duration) Event {
	return newEvent(TypeAttemptSucceeded, map[string]any{"step": step, "attempt": attempt, "duration_ms": ms(d)})
}

// Failure is a failed attempt as events tell it.
type Failure struct {
	Step     string
	Attempt  int
	Kind     string // exit, signal, timeout, spawn, circuit_open
	ExitCode int
	Message  string
	Duration time.Duration
	// Stdout and Stderr are what the attempt printed (its tails, masked);
	// the event keeps their last OutputTailSize bytes.
	Stdout, Stderr string
}

func (f Failure) fields() map[string]any {
	fields := map[string]any{
		"step": f.Step, "attempt": f.Attempt, "kind": f.Kind, "exit_code": f.ExitCode,
		"message": f.Message, "duration_ms": ms(f.Duration),
	}
	addOutput(fields, f.Stdout, f.Stderr)
	return fields
}

// OutputTailSize is how many trailing bytes of a command's stdout and
// stderr the events of its end keep, as stdout_tail and stderr_tail (for
// the JUnit report's system-out and system-err).
const OutputTailSize = 4 << 10

// WithOutput returns a copy of e that keeps the tails of what its
// command printed on stdout and stderr (the last OutputTailSize bytes of
// each; none for an empty stream).
func (e Event) WithOutput(stdout, stderr string) Event {
	fields := make(map[string]any, len(e.Fields)+2)
	for k, v := range e.Fields {
		fields[k] = v
	}
	addOutput(fields, stdout, stderr)
	e.Fields = fields
	return e
}

// addOutput sets the stdout_tail and stderr_tail fields of a non-empty
// stdout and stderr.
func addOutput(fields map[string]any, stdout, stderr string) {
	if stdout != "" {
		fields["stdout_tail"] = outputTail(stdout)
	}
	if stderr != "" {
		fields["stderr_tail"] = outputTail(stderr)
	}
}

// outputTail is the last OutputTailSize bytes of s, from the start of a
// UTF-8 character.
func outputTail(s string) string {
	if len(s) <= OutputTailSize {
		return s
	}
	s = s[len(s)-OutputTailSize:]
	for i := 0; i < utf8.UTFMax && s != "" && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

// AttemptFailed: an attempt of f.Step's command failed.
func AttemptFailed(f Failure) Event { return newEvent(TypeAttemptFailed, f.fields()) }

// Decision is what the retry policies decided after a failed attempt.
type Decision struct {
	Attempt  int    // the attempt that failed
	Policy   int    // index of the policy that handled it; -1 for none
	Matcher  string // the matcher that accepted it ("" = no retry_on)
	Action   string // "retry" or "stop"
	Delay    time.Duration
	Reason   string
	Limit    int // the handling policy's attempts
	Count    int // failures the handling policy has seen, this one included
	Kind     string
	ExitCode int
}

// RetryDecision: the retry policies decided d after a failed attempt of
// step.
func RetryDecision(step string, d Decision) Event {
	return newEvent(TypeRetryDecision, map[string]any{
		"step": step, "attempt": d.Attempt, "policy": d.Policy, "matcher": d.Matcher, "action": d.Action,
		"delay_ms": ms(d.Delay), "reason": d.Reason, "limit": d.Limit, "count": d.Count,
		"kind": d.Kind, "exit_code": d.ExitCode,
	})
}

// FallbackFailed: the on_failure fallback of step failed too.
func FallbackFailed(step, message string) Event {
	return newEvent(TypeFallbackFailed, map[string]any{"step": step, "error": message})
}

// HandlerCompleted: on_failure handler number handler (from 1) of step
// ran and exited with exitCode.
func HandlerCompleted(step string, handler, exitCode int) Event {
	return newEvent(TypeHandlerCompleted, map[string]any{"step": step, "handler": handler, "exit_code": exitCode})
}

// HandlerFailed: on_failure handler number handler (from 1) of step ran
// and failed with message (its exit code, or a commit it did not make).
func HandlerFailed(step string, handler, exitCode int, message string) Event {
	return newEvent(TypeHandlerCompleted, map[string]any{"step": step, "handler": handler, "exit_code": exitCode, "error": message})
}

// CircuitChanged: a circuit breaker went to state to ("open", "half_open"
// or "closed"); scope is "step" (then step names it) or "workflow".
func CircuitChanged(to, scope, step string) Event {
	fields := map[string]any{"scope": scope}
	if step != "" {
		fields["step"] = step
	}
	return newEvent(circuitTypes[to], fields)
}

// ThresholdReached: an error-policy rule stops the job, for reason.
func ThresholdReached(rule, reason string) Event {
	return newEvent(TypeThresholdReached, map[string]any{"rule": rule, "reason": reason})
}

// BudgetReached: the job's agents spent what limit (max_cost_usd or
// max_tokens) allows, max; running is the items still running, which
// finish.
func BudgetReached(limit string, max float64, spent AgentUsage, running int) Event {
	return newEvent(TypeBudgetReached, map[string]any{"limit": limit, "max": max, "cost_usd": spent.CostUSD, "tokens": spent.Tokens(), "running": running})
}

// ItemsLoaded: the map input gave total items from source in d.
func ItemsLoaded(total int, source string, d time.Duration) Event {
	return newEvent(TypeItemsLoaded, map[string]any{"total": total, "source": source, "duration_ms": ms(d)})
}

// MapStarted: the map phase starts with pending of total items left, its
// items isolated as map.isolation says (none or worktree).
func MapStarted(total, pending, maxParallel int, isolation string) Event {
	return newEvent(TypeMapStarted, map[string]any{"total": total, "pending": pending, "max_parallel": maxParallel, "isolation": isolation})
}

// ItemCounts are a map phase's items by state; the fields are those of
// state.ItemCounts, which converts to this type.
type ItemCounts struct {
	Total     int
	Succeeded int
	Failed    int
	Skipped   int
	DLQ       int
	Pending   int
}

func (c ItemCounts) fields() map[string]any {
	return map[string]any{"total": c.Total, "succeeded": c.Succeeded, "failed": c.Failed, "skipped": c.Skipped, "dlq": c.DLQ, "pending": c.Pending}
}

// MapCompleted: the map phase ended with items counted c.
func MapCompleted(c ItemCounts) Event { return newEvent(TypeMapCompleted, c.fields()) }

// ReduceSkipped: the reduce phase's steps did not run, for reason.
func ReduceSkipped(steps int, reason string) Event {
	return newEvent(TypeReduceSkipped, map[string]any{"steps": steps, "reason": reason})
}

// ItemStarted: attempt of item id (index in the input) starts, or after a
// crash goes on from its checkpoints (resumed).
func ItemStarted(id string, index, attempt int, resumed bool) Event {
	fields := map[string]any{"item_id": id, "item_index": index, "attempt": attempt}
	if resumed {
		fields["resumed"] = true
	}
	return newEvent(TypeItemStarted, fields)
}

// ItemSucceeded: attempt of item id succeeded after d.
func ItemSucceeded(id string, attempt int, d time.Duration) Event {
	return newEvent(TypeItemSucceeded, map[string]any{"item_id": id, "attempt": attempt, "duration_ms": ms(d)})
}

// ItemRetrying: attempt f.Attempt of item id failed; the next starts after
// delay.
func ItemRetrying(id string, f Failure, delay time.Duration) Event {
	fields := f.fields()
	fields["item_id"], fields["delay_ms"] = id, ms(delay)
	return newEvent(TypeItemRetrying, fields)
}

// ItemFailed: item id (whose input value is item) failed for good with f;
// action is what the error policy does with it.
func ItemFailed(id string, f Failure, action string, item any) Event {
	fields := f.fields()
	fields["item_id"], fields["action"], fields["item"] = id, action, item
	return newEvent(TypeItemFailed, fields)
}

// ResultDuplicate: a result of attempt of item id, run by worker (its
// delivery-th delivery) in epoch, was dropped: the attempt had one.
func ResultDuplicate(id string, attempt, epoch int, worker string, delivery int) Event {
	return newEvent(TypeResultDuplicate, map[string]any{"item_id": id, "attempt": attempt, "epoch": epoch, "worker": worker, "delivery": delivery})
}

// TaskRedelivered: the task of attempt of item id went to worker in its
// delivery-th delivery; from is the worker that had it before ("": not
// known).
func TaskRedelivered(id string, attempt, delivery int, worker, from string) Event {
	fields := map[string]any{"item_id": id, "attempt": attempt, "delivery": delivery, "worker": worker}
	if from != "" {
		fields["from_worker"] = from
	}
	return newEvent(TypeTaskRedelivered, fields)
}

// NATSStreams records how the NATS streams and bucket of a job's items
// are replicated: the fewest replicas among them, and in words ("R3", or
// each one's when they differ).
func NATSStreams(replicas int, replication string) Event {
	return newEvent(TypeNATSStreams, map[string]any{"replicas": replicas, "replication": replication})
}

// NATSUnavailable records that the NATS stream named stopped answering,
// and why.
func NATSUnavailable(stream, message string) Event {
	return newEvent(TypeNATSUnavailable, map[string]any{"stream": stream, "message": message})
}

// NATSRestored records that the NATS streams answer again, after stream
// did not for down.
func NATSRestored(stream string, down time.Duration) Event {
	return newEvent(TypeNATSRestored, map[string]any{"stream": stream, "down_ms": down.Milliseconds()})
}

// WithWorker returns a copy of e told of the NATS worker that ran it, in
// the delivery-th delivery of its task; e itself when worker is "".
func (e Event) WithWorker(worker string, delivery int) Event {
	if worker == "" {
		return e
	}
	added := map[string]any{"worker": worker}
	if delivery > 0 {
		added["delivery"] = delivery
	}
	return e.with(added)
}

// WithRun returns a copy of e told of the run of a NATS task that sent
// it, as "run_id" (remote.RunID's text) and "seq", its place among the
// run's events from 1: a process resuming the job records a run's events
// that an ended one recorded no more.
func (e Event) WithRun(run string, seq int) Event {
	return e.with(map[string]any{"run_id": run, "seq": seq})
}

// with returns a copy of e with added among its fields.
func (e Event) with(added map[string]any) Event {
	fields := make(map[string]any, len(e.Fields)+len(added))
	for k, v := range e.Fields {
		fields[k] = v
	}
	for k, v := range added {
		fields[k] = v
	}
	e.Fields = fields
	return e
}

// Merge is what became of the git branch of an item run in its own
// worktree (map.isolation: worktree).
type Merge struct {
	Branch  string
	Commits int  // the commits the item made on it
	Merged  bool // merged into the job branch
	// Conflicts are the paths whose merge conflicted (the merge was
	// aborted, the branch kept).
	Conflicts []string
}

// WithMerge returns a copy of e, the end of an item, told of its branch
// and merge as "branch", "commits", "merged" and "conflicts"; e itself
// when m has no branch.
func (e Event) WithMerge(m Merge) Event {
	if m.Branch == "" {
		return e
	}
	fields := make(map[string]any, len(e.Fields)+4)
	for k, v := range e.Fields {
		fields[k] = v
	}
	fields["branch"], fields["commits"], fields["merged"] = m.Branch, m.Commits, m.Merged
	if len(m.Conflicts) > 0 {
		fields["conflicts"] = m.Conflicts
	}
	e.Fields = fields
	return e
}

// Redacted returns a copy of e with redact applied to every string in
// its fields.
func (e Event) Redacted(redact func(string) string) Event {
	e.Fields = redactFields(e.Fields, redact)
	e.ItemID, _ = e.Fields["item_id"].(string)
	return e
}

// ItemSkipped: item id did not run, or is not retried, for reason.
func ItemSkipped(id, reason string) Event {
	return newEvent(TypeItemSkipped, map[string]any{"item_id": id, "reason": reason})
}

// DLQAdded: item id went to the DLQ with its failures.
func DLQAdded(id string, failures int) Event {
	return newEvent(TypeDLQAdded, map[string]any{"item_id": id, "failures": failures})
}

// DLQRemoved: item id left the DLQ, for reason ("" when a retry of it
// succeeded).
func DLQRemoved(id, reason string) Event {
	fields := map[string]any{"item_id": id}
	if reason != "" {
		fields["reason"] = reason
	}
	return newEvent(TypeDLQRemoved, fields)
}

// DLQRetryStarted: a dlq retry of items starts.
func DLQRetryStarted(items, maxParallel int) Event {
	return newEvent(TypeDLQRetryStarted, map[string]any{"items": items, "max_parallel": maxParallel})
}

// DLQRetryFinished: a dlq retry ended with its items counted c.
func DLQRetryFinished(c ItemCounts) Event { return newEvent(TypeDLQRetryFinished, c.fields()) }
