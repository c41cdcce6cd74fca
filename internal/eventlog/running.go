package eventlog

// Running is what the agents still running have spent, as their
// agent_progress events tell it: each run's last figures (a run is an
// item's step's attempt), until its agent_usage replaces them (the job's
// spend then counts the run) or its attempt or item ends. Its zero value
// is ready; it is not safe for concurrent use.
type Running struct {
	runs map[agentRun]AgentUsage
}

// agentRun is one run of an agent: the attempt of a step of an item ("":
// none).
type agentRun struct {
	item, step string
	attempt    int64
}

// Observe takes an event of the job into account.
func (r *Running) Observe(e Event) {
	run := agentRun{e.ItemID, e.Str("step"), e.Int("attempt")}
	switch e.Type {
	case TypeAgentProgress:
		if r.runs == nil {
			r.runs = make(map[agentRun]AgentUsage)
		}
		r.runs[run] = e.usage()
	case TypeAgentUsage, TypeAttemptSucceeded, TypeAttemptFailed:
		delete(r.runs, run)
	case TypeItemSucceeded, TypeItemFailed, TypeItemRetrying: // its runs ended, however they did
		for k := range r.runs {
			if k.item == e.ItemID {
				delete(r.runs, k)
			}
		}
	}
}

// Sum is what the running agents have spent so far, together.
func (r *Running) Sum() AgentUsage {
	var sum AgentUsage
	for _, u := range r.runs {
		sum = sum.Add(u)
	}
	sum.SessionID, sum.Model = "", ""
	return sum
}
