package errorpolicy

import "github.com/runnerdev/runner/internal/breaker"

// Action is what happens to an item that finally failed.
type Action string

// Item failure actions.
const (
	DLQ   Action = "dlq"
	Retry Action = "retry"
	Skip  Action = "skip"
	Stop  Action = "stop"
)

// Collection says when failures are reported to the user.
type Collection struct {
	Mode      string // "aggregate" (default), "immediate", "batched"
	BatchSize int    // batched only
}

// Policy is a workflow's error_policy.
type Policy struct {
	OnItemFailure     Action // default DLQ
	ContinueOnFailure bool   // default true
	MaxFailures       int    // 0: no limit
	FailureThreshold  float64
	MinItems          int // default 10
	Collection        Collection
	Breaker           *breaker.Config // the workflow circuit breaker; nil: none
}

// Default is the policy of a workflow that sets none.
func Default() Policy {
	return Policy{OnItemFailure: DLQ, ContinueOnFailure: true, MinItems: 10, Collection: Collection{Mode: "aggregate"}}
}
