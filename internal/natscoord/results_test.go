package natscoord

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
)

// A job's results leave the results stream when it ends: the
// acknowledgements the coordinator sends without waiting are confirmed
// before Close deletes the job's consumer (a work-queue stream keeps the
// messages a deleted consumer did not acknowledge).
func TestJobLeavesNoResults(t *testing.T) {
	const items = 20
	srv, objs, j := serveJob(t, fmt.Sprintf("mode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: \"true\"\n", items))
	runWorker(t, srv, natsconn.DefaultQueue)
	finishSucceeded(t, j, <-startMap(t, j, time.Minute, Options{Conn: srv.Connect(t)}), items)
	if st := streamState(t, objs.Results); st.Msgs != 0 {
		t.Errorf("the results stream holds %d results after the job, want 0", st.Msgs)
	}
}
