package mapreduce_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// A MapReduce job whose items run in this process (InProcess).
func Example_localDispatch() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	src := []byte(`mode: mapreduce
map:
  input: printf 'a\nb\nc\n'
  agent_template:
    - shell: echo "item ${item}"
reduce:
  - shell: echo "${map.successful} of ${map.total} items succeeded"
`)
	wf, err := workflow.Parse("example.yml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	j, err := job.Start(wf, src, job.Options{Store: state.Store{Dir: filepath.Join(dir, "state")}, JobID: "example", Stdout: os.Stdout, Stderr: io.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	ctx := context.Background()
	sum, err := mapreduce.Run(ctx, j, mapreduce.Options{DLQ: jobdlq.Open(ctx, j.ID(), j.Layout().DLQ, io.Discard), Dispatcher: mapreduce.InProcess(nil)})
	fmt.Println(sum.Items.Succeeded, err)
	// Output:
	// 3 of 3 items succeeded
	// 3 <nil>
}
