// Package errorpolicy decides what a MapReduce job does after an item
// fails: send it to the DLQ, retry, skip or stop; failure thresholds; and the
// workflow circuit breaker that pauses dispatch.
package errorpolicy

import "time"

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

// Breaker configures the workflow circuit breaker.
type Breaker struct {
	FailureThreshold int           // consecutive item failures that open it (default 5)
	SuccessThreshold int           // consecutive probe successes that close it (default 3)
	Timeout          time.Duration // pause while open (default 30s)
	HalfOpenRequests int           // probes while half-open (default 3)
}

// Policy is a workflow's error_policy.
type Policy struct {
	OnItemFailure     Action // default DLQ
	ContinueOnFailure bool   // default true
	MaxFailures       int    // 0: no limit
	FailureThreshold  float64
	MinItems          int // default 10
	Collection        Collection
	Breaker           *Breaker
}

// Default is the policy of a workflow that sets none.
func Default() Policy {
	return Policy{OnItemFailure: DLQ, ContinueOnFailure: true, MinItems: 10, Collection: Collection{Mode: "aggregate"}}
}
