package workflow_test

import (
	"errors"
	"fmt"

	"github.com/runnerdev/runner/workflow"
)

// A standard workflow: its steps in order, each with its command and
// retry policies.
func ExampleParse() {
	src := []byte(`name: release
steps:
  - shell: make test
    retry_config:
      attempts: 3
      backoff: exponential
  - name: publish
    shell: ./publish.sh ${VERSION}
    timeout: 2m
`)
	wf, err := workflow.Parse("release.yml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(wf.Name, wf.Mode)
	for _, s := range wf.Steps {
		fmt.Printf("line %d: %s: %s", s.Pos.Line, s.Command.Kind, s.CommandText())
		for _, p := range s.Retry {
			fmt.Printf(", %d attempts, %s backoff", p.Attempts, p.Backoff.Strategy)
		}
		if s.Timeout > 0 {
			fmt.Printf(", timeout %v", s.Timeout)
		}
		fmt.Println()
	}
	// Output:
	// release standard
	// line 3: shell: make test, 3 attempts, exponential backoff
	// line 7: shell: ./publish.sh ${VERSION}, timeout 2m0s
}

// Every problem of a file is found before anything runs, each at its line
// and column.
func ExampleParseErrors() {
	src := []byte(`name: release
steps:
  - shel: make test
  - shell: ./publish.sh
    timeout: soon
`)
	_, err := workflow.Parse("release.yml", src)
	var errs workflow.ParseErrors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Println(e)
		}
	}
	// Output:
	// release.yml:3:5: unknown key "shel" in step commands[0] (did you mean "shell"?)
	// release.yml:5:14: timeout: bad duration "soon": want a duration such as 250ms, 2s, 1m30s, 1h or 1d, a number of seconds, or ISO-8601 such as PT30S
}
