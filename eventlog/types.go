package eventlog

// Types are the event types runner writes, grouped as a job meets them
// (`runner events --type` takes these).
var Types = []string{
	"job_started", "job_resumed", "job_completed", "job_failed", "job_stopped", "job_interrupted",
	"step_started", "step_completed", "step_failed", "step_skipped", "step_repeat",
	"attempt_started", "attempt_succeeded", "attempt_failed", "retry_decision",
	"fallback_failed", "handler_completed",
	"items_loaded", "map_started", "map_completed",
	"item_started", "item_succeeded", "item_failed", "item_retrying", "item_skipped",
	"dlq_added", "dlq_removed", "dlq_retry_started", "dlq_retry_finished",
	"circuit_opened", "circuit_half_open", "circuit_closed", "threshold_reached",
}
