package natsworker

import (
	"sync"
	"time"
)

// lease is how long a run may go on without a heartbeat answered by the
// server: ack_wait less two heartbeats, counted from the sending of the
// last heartbeat answered (or from the delivery), so that the run stops
// before the server gives its task to another worker. The run's process
// groups are leased to the worker's watchdog until then. The lease is the
// one owner of whether its run was cut off: once it ran out, or its
// watchdog killed one of its groups, it has ended for good, and the run
// sends no result.
type lease struct {
	wd    *watchdog // nil: no watchdog
	limit time.Duration

	mu     sync.Mutex
	until  time.Time
	groups map[int]struct{}
	// ended is set once the lease ran out or the watchdog killed one of
	// its groups: an answer that comes after that (a frozen worker's
	// heartbeat, answered when it thaws; one answered just before the
	// end that the watchdog had not read yet when it killed) renews
	// nothing, as the server may have given the task to another worker.
	ended bool
}

func newLease(wd *watchdog, limit time.Duration, from time.Time) *lease {
	return &lease{wd: wd, limit: limit, until: from.Add(limit), groups: map[int]struct{}{}}
}

// hook leases a process group of the run to the watchdog until the run's
// lease ends, and frees it when it is done (a proc.GroupHook); the lease
// ends when the watchdog killed the group. The watchdog is written to
// under the lease's lock, so that it reads a group's leases in the order
// they were given.
func (l *lease) hook(pgid int) func() {
	l.mu.Lock()
	l.wd.killed(pgid) // a mark left of an earlier group of that id, killed as it ended
	l.groups[pgid] = struct{}{}
	l.wd.lease(pgid, l.until)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.groups, pgid)
		l.wd.free(pgid)
		if l.wd.killed(pgid) {
			l.ended = true
		}
	}
}

// renew extends the lease when the server answered at answered a
// heartbeat sent at sent: from sent, as the server restarted its ack_wait
// clock between the two and an answer can be read late (a loaded
// machine); an answer after the lease ran out ends it instead. It reports
// whether the lease goes on.
func (l *lease) renew(sent, answered time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || answered.After(l.until) {
		l.ended = true
		return false
	}
	if until := sent.Add(l.limit); until.After(l.until) {
		l.until = until
		for g := range l.groups {
			l.wd.lease(g, until)
		}
	}
	return true
}

// expired reports whether the lease has ended by now.
func (l *lease) expired(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = l.ended || now.After(l.until)
	return l.ended
}
