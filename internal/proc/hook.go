package proc

import "context"

// GroupHook is told of each process group Run starts under a context that
// carries it (WithGroupHook), by the group's id; Run calls the function it
// returns once it is done with the group (emptied or given up on). A NATS
// worker leases its items' groups to a watchdog process this way.
type GroupHook func(pgid int) (done func())

type groupHookKey struct{}

// WithGroupHook returns ctx carrying h, for the runs under it. A hook ctx
// carries already is told too, before h.
func WithGroupHook(ctx context.Context, h GroupHook) context.Context {
	if outer := groupHookOf(ctx); outer != nil {
		inner := h
		h = func(pgid int) func() {
			outerDone, innerDone := outer(pgid), inner(pgid)
			return func() { innerDone(); outerDone() }
		}
	}
	return context.WithValue(ctx, groupHookKey{}, h)
}

func groupHookOf(ctx context.Context) GroupHook {
	h, _ := ctx.Value(groupHookKey{}).(GroupHook)
	return h
}
