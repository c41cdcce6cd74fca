package plan_test

import (
	"fmt"
	"os"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/plan"
	"github.com/runnerdev/runner/workflow"
)

// What a workflow would run, and when each retry would come.
func Example() {
	wf, err := workflow.Parse("deploy.yml", []byte(`name: deploy
steps:
  - shell: ./deploy.sh
    timeout: 5m
    retry_config:
      attempts: 4
      backoff: exponential
      initial_delay: 2s
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := plan.New(wf, nil, executor.ResolveAgent(wf.Agent, nil))
	if err := p.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// workflow "deploy" (standard); nothing is run
	// commands:
	//   1. step 1: ./deploy.sh
	//      runs: the program directly, without a shell (a plain list of words)
	//      timeout: 5m0s per attempt
	//      retry: 4 attempts, exponential backoff; delays 2s, 4s, 8s (total 14s); max_delay 30s
}
