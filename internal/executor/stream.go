package executor

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/runnerdev/runner/internal/proc"
)

// Stream runs a shell command that is not a step (the map phase's input
// command) with the job's environment, its stdout going to stdout and its
// stderr to the job's, in dir ("" = this process's directory). It returns nil when the command exited 0, and
// otherwise an error with its last line of stderr.
func (x *Executor) Stream(ctx context.Context, command, dir string, stdout io.Writer) error {
	res := proc.Run(ctx, proc.Spec{
		Command: command,
		Dir:     dir,
		Env:     append(slices.Clip(x.Env), "RUNNER_JOB_ID="+x.JobID),
		Stdout:  stdout,
		Stderr:  x.Stderr,
		Grace:   x.Grace,
	})
	if res.Kind == proc.KindOK {
		return nil
	}
	msg := res.Err.Error()
	if tail := strings.TrimSpace(string(res.StderrTail)); tail != "" {
		msg += ": " + tail[strings.LastIndexByte(tail, '\n')+1:]
	}
	return fmt.Errorf("command %q failed: %s", command, msg)
}

// OutputTail keeps the last proc.TailSize bytes written to it (an item's
// output, for its result). It is safe for concurrent use.
type OutputTail struct {
	mu   sync.Mutex
	tail proc.Tail
}

// Write keeps the end of p; it never fails.
func (t *OutputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tail.Write(p)
}

// String returns what was kept, in order.
func (t *OutputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.tail.Bytes())
}
