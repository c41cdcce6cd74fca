package proc_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runnerdev/runner/internal/proc"
)

// A command's result says how it ended, with the end of each stream.
func ExampleRun() {
	ctx := context.Background()
	res := proc.Run(ctx, proc.Spec{Command: "echo built; echo 'missing: x.go' >&2; exit 3", Env: os.Environ(), Timeout: time.Minute})
	fmt.Println(res.Kind, res.ExitCode, res.Err)
	fmt.Printf("%q %q\n", res.StdoutTail, res.StderrTail)

	res = proc.Run(ctx, proc.Spec{Command: "sleep 60 & wait", Env: os.Environ(), Timeout: 50 * time.Millisecond})
	fmt.Println(res.Kind, res.ExitCode, res.Err)
	// Output:
	// exit 3 exit status 3
	// "built\n" "missing: x.go\n"
	// timeout 124 timed out after 50ms
}
