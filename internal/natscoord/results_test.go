package natscoord

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
)

// A job's results leave the results stream when it ends: the
// acknowledgements the coordinator sends without waiting are confirmed
// before Close deletes the job's consumer (a work-queue stream keeps the
// messages a deleted consumer did not acknowledge).
func TestJobLeavesNoResults(t *testing.T) {
	srv, _, objs := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	const items = 20
	j := startJob(t, dir, fmt.Sprintf("mode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: \"true\"\n", items))
	runWorker(t, srv, natsconn.DefaultQueue)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := <-runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard})
	if r.err != nil || r.sum.Items.Succeeded != items {
		t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, items)
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := streamState(t, objs.Results); st.Msgs != 0 {
		t.Errorf("the results stream holds %d results after the job, want 0", st.Msgs)
	}
}
