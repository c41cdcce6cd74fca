package natsworker

import (
	"sync"
	"time"
)

// lease is how long a run may go on without a heartbeat answered by the
// server: ack_wait less two heartbeats, counted from the sending of the
// last heartbeat answered (or from the delivery), so that the run stops before the server gives its
// task to another worker. The run's process groups are leased to the
// worker's watchdog until then, and a run whose lease ran out sends no
// result.
type lease struct {
	wd    *watchdog // nil: no watchdog
	limit time.Duration

	mu     sync.Mutex
	until  time.Time
	groups map[int]struct{}
	// ended is set once the lease ran out: an answer that comes after
	// that (a frozen worker's heartbeat, answered when it thaws) renews
	// nothing, as the server may have given the task to another worker.
	ended bool
}

func newLease(wd *watchdog, limit time.Duration, from time.Time) *lease {
	return &lease{wd: wd, limit: limit, until: from.Add(limit), groups: map[int]struct{}{}}
}

// hook leases a process group of the run to the watchdog until the run's
// lease ends, and frees it when it is done (a proc.GroupHook).
func (l *lease) hook(pgid int) func() {
	l.mu.Lock()
	l.groups[pgid] = struct{}{}
	until := l.until
	l.mu.Unlock()
	l.wd.lease(pgid, until)
	return func() {
		l.mu.Lock()
		delete(l.groups, pgid)
		l.mu.Unlock()
		l.wd.free(pgid)
	}
}

// renew extends the lease when the server answered at answered a
// heartbeat sent at sent: from sent, as the server restarted its ack_wait
// clock between the two and an answer can be read late (a loaded
// machine); an answer after the lease ran out ends it instead.
func (l *lease) renew(sent, answered time.Time) {
	l.mu.Lock()
	if l.ended || answered.After(l.until) {
		l.ended = true
		l.mu.Unlock()
		return
	}
	l.until = sent.Add(l.limit)
	until := l.until
	groups := make([]int, 0, len(l.groups))
	for g := range l.groups {
		groups = append(groups, g)
	}
	l.mu.Unlock()
	for _, g := range groups {
		l.wd.lease(g, until)
	}
}

// expired reports whether the lease ran out by now.
func (l *lease) expired(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = l.ended || now.After(l.until)
	return l.ended
}
