package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// runCommandTo runs attempt n of the step's own command, its stdout also
// written (secrets masked) to the step's output_file, which each attempt
// writes anew, making its missing parent directories (as Prodigy does).
func (x *Executor) runCommandTo(ctx context.Context, step *workflow.Step, r Run, n int, capture bool) commandResult {
	if step.OutputFile == nil {
		return x.runCommand(ctx, step, step.Command, r, n, capture)
	}
	_, path, err := x.stepPath(step, r, step.OutputFile, "output_file")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	var f *os.File
	if err == nil {
		f, err = os.Create(path)
	}
	if err != nil {
		return commandResult{Outcome: retryv2.Outcome{Attempt: n, Kind: retryv2.KindSpawn, ExitCode: -1, Err: fmt.Errorf("output_file: %w", err)}}
	}
	live := r.stdout(x)
	r.Stdout = f
	if live != nil {
		r.Stdout = io.MultiWriter(live, f)
	}
	res := x.runCommand(ctx, step, step.Command, r, n, capture)
	if err := f.Close(); err != nil && !res.Failed() {
		res.Kind, res.ExitCode, res.Err = retryv2.KindSpawn, -1, fmt.Errorf("output_file: %w", err)
	}
	return res
}
