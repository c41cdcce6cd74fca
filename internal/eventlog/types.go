package eventlog

// Type is the type of an event: the "type" of its line in the log.
type Type string

// The event types runner writes (SPEC §8 names the ones a user can rely
// on; the others say more of what a job did).
const (
	TypeJobStarted     Type = "job_started"
	TypeJobResumed     Type = "job_resumed"
	TypeJobCompleted   Type = "job_completed"
	TypeJobFailed      Type = "job_failed"
	TypeJobStopped     Type = "job_stopped"
	TypeJobInterrupted Type = "job_interrupted"
	// TypeJobChanged: resume changed what the job runs: the workflow file
	// it goes on with (resume --workflow), variables set (--set).
	TypeJobChanged Type = "job_changed"

	TypeStepStarted   Type = "step_started"
	TypeStepCompleted Type = "step_completed"
	TypeStepFailed    Type = "step_failed"
	TypeStepSkipped   Type = "step_skipped"
	TypeStepRepeat    Type = "step_repeat"

	TypeAttemptStarted   Type = "attempt_started"
	TypeAttemptSucceeded Type = "attempt_succeeded"
	TypeAttemptFailed    Type = "attempt_failed"
	TypeRetryDecision    Type = "retry_decision"

	TypeFallbackFailed   Type = "fallback_failed"
	TypeHandlerCompleted Type = "handler_completed"
	// TypeAgentUsage is what one run of an agent command (a claude: step
	// whose agent streams Claude Code's stream-json) spent.
	TypeAgentUsage Type = "agent_usage"
	// TypeAgentProgress is what a running agent has spent so far, from
	// the usage of its stream's messages (its cost estimated at list
	// prices); its agent_usage replaces it when the run ends.
	TypeAgentProgress Type = "agent_progress"

	TypeItemsLoaded  Type = "items_loaded"
	TypeMapStarted   Type = "map_started"
	TypeMapCompleted Type = "map_completed"
	// TypeReduceSkipped: the reduce phase did not run (the map had no
	// items, as Prodigy skips it then).
	TypeReduceSkipped Type = "reduce_skipped"

	TypeItemStarted   Type = "item_started"
	TypeItemSucceeded Type = "item_succeeded"
	TypeItemFailed    Type = "item_failed"
	TypeItemRetrying  Type = "item_retrying"
	TypeItemSkipped   Type = "item_skipped"
	// TypeResultDuplicate: a NATS worker's result for an attempt that
	// already has one (a redelivered task ran again) was dropped.
	TypeResultDuplicate Type = "result_duplicate"
	// TypeTaskRedelivered: the NATS server delivered an item's task again
	// (the worker that had it stopped answering, or gave it back).
	TypeTaskRedelivered Type = "task_redelivered"
	// TypeNATSStreams: the replication of the NATS streams and bucket a
	// job's items go through, as its coordinator opened them.
	TypeNATSStreams Type = "nats_streams"
	// TypeNATSUnavailable: one of them stopped answering (its server down,
	// its cluster without a leader for it); the job waits for it.
	TypeNATSUnavailable Type = "nats_unavailable"
	// TypeNATSRestored: they all answer again.
	TypeNATSRestored Type = "nats_restored"

	TypeDLQAdded         Type = "dlq_added"
	TypeDLQRemoved       Type = "dlq_removed"
	TypeDLQRetryStarted  Type = "dlq_retry_started"
	TypeDLQRetryFinished Type = "dlq_retry_finished"

	TypeCircuitOpened    Type = "circuit_opened"
	TypeCircuitHalfOpen  Type = "circuit_half_open"
	TypeCircuitClosed    Type = "circuit_closed"
	TypeThresholdReached Type = "threshold_reached"
	// TypeBudgetReached: the job's agents spent its budget (max_cost_usd
	// or max_tokens); no more items start.
	TypeBudgetReached Type = "budget_reached"
)

// Types are the event types runner writes, grouped as a job meets them
// (`runner events --type` takes these).
var Types = []Type{
	TypeJobStarted, TypeJobResumed, TypeJobChanged, TypeJobCompleted, TypeJobFailed, TypeJobStopped, TypeJobInterrupted,
	TypeStepStarted, TypeStepCompleted, TypeStepFailed, TypeStepSkipped, TypeStepRepeat,
	TypeAttemptStarted, TypeAttemptSucceeded, TypeAttemptFailed, TypeRetryDecision,
	TypeFallbackFailed, TypeHandlerCompleted, TypeAgentProgress, TypeAgentUsage,
	TypeItemsLoaded, TypeMapStarted, TypeMapCompleted, TypeReduceSkipped,
	TypeItemStarted, TypeItemSucceeded, TypeItemFailed, TypeItemRetrying, TypeItemSkipped, TypeResultDuplicate, TypeTaskRedelivered,
	TypeNATSStreams, TypeNATSUnavailable, TypeNATSRestored,
	TypeDLQAdded, TypeDLQRemoved, TypeDLQRetryStarted, TypeDLQRetryFinished,
	TypeCircuitOpened, TypeCircuitHalfOpen, TypeCircuitClosed, TypeThresholdReached, TypeBudgetReached,
}

// jobEnds are the types that end a run of a job, by the job status each
// records.
var jobEnds = map[string]Type{
	"completed":   TypeJobCompleted,
	"failed":      TypeJobFailed,
	"stopped":     TypeJobStopped,
	"interrupted": TypeJobInterrupted,
}

// JobEnded reports whether an event of type t ends a run of its job.
func JobEnded(t Type) bool {
	for _, end := range jobEnds {
		if t == end {
			return true
		}
	}
	return false
}

// circuitTypes are the event types of a circuit breaker's transitions, by
// the state it goes to (as the breaker package names them).
var circuitTypes = map[string]Type{
	"open":      TypeCircuitOpened,
	"half_open": TypeCircuitHalfOpen,
	"closed":    TypeCircuitClosed,
}
