package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// validated runs the validate block of a step whose command succeeded
// (done is its result so far): the check, then while the check reports
// less than the threshold, on_incomplete attempts, each followed by the
// check again. A check whose result cannot be read (an invalid JSON
// object, a missing result_file, a timeout) fails the step whatever
// on_incomplete says: filling gaps cannot mend a broken check.
func (x *Executor) validated(ctx context.Context, step *workflow.Step, r Run, done StepResult) StepResult {
	v, key := step.Validate, r.label(step)
	found, err := x.check(ctx, step, r, v.Checks)
	recheck := v.Checks
	if len(recheck) == 0 {
		recheck = []workflow.ValidationCommand{{Command: step.Command}} // the step's own command is the check
	}
	attempts, incomplete := 0, false
	for err == nil && found.completion < v.Threshold {
		if v.OnIncomplete == nil || attempts == v.OnIncomplete.MaxAttempts {
			err, incomplete = found.shortOf(v.Threshold, attempts, nil), true
			break
		}
		attempts++
		if ferr := x.fillGaps(ctx, step, r, found, attempts); ferr != nil {
			err, incomplete = found.shortOf(v.Threshold, attempts, ferr), true
			break
		}
		found, err = x.check(ctx, step, r, recheck)
	}
	if err == nil {
		return done
	}
	res := done
	res.Status, res.Err = StepFailed, stepError(key, err)
	if incomplete && ctx.Err() == nil && v.OnIncomplete != nil && !v.OnIncomplete.FailWorkflow {
		res.Handled = workflow.FailContinue
	}
	x.emit(r, eventlog.StepCommandFailed(key, res.Err.Error(), done.Outcome.ExitCode, string(res.Handled)).WithOutput(done.Outcome.Stdout, done.Outcome.Stderr))
	return res
}

// checkResult is what a check reported: its JSON object and the
// completion_percentage in it.
type checkResult struct {
	completion float64
	fields     map[string]any
}

// shortOf is the error of a result still below threshold after attempts
// on_incomplete attempts, the last of which may have failed (cause).
func (c checkResult) shortOf(threshold float64, attempts int, cause error) error {
	err := fmt.Errorf("validation incomplete: %g%% complete, threshold %g%%", c.completion, threshold)
	switch {
	case cause != nil:
		return fmt.Errorf("%w; %w", err, cause)
	case attempts == 1:
		return fmt.Errorf("%w, after 1 on_incomplete attempt", err)
	case attempts > 1:
		return fmt.Errorf("%w, after %d on_incomplete attempts", err, attempts)
	}
	return err
}

// vars are the ${validation.*} of on_incomplete attempt number attempt:
// every field the check wrote, with Prodigy's names filled in where it
// left them out.
func (c checkResult) vars(attempt int) map[string]any {
	v := maps.Clone(c.fields)
	v["completion"] = c.completion
	for name, empty := range map[string]any{"gaps": map[string]any{}, "missing": []any{}, "implemented": []any{}, "status": "incomplete"} {
		if v[name] == nil {
			v[name] = empty
		}
	}
	if missing, ok := v["missing"].([]any); ok {
		v["missing_count"] = int64(len(missing))
	}
	v["attempt_number"] = int64(attempt)
	return v
}

// check runs the check's commands (none: the step's own command already
// ran) and reads the JSON they reported: validate.result_file, or the
// last command's stdout.
func (x *Executor) check(ctx context.Context, step *workflow.Step, r Run, cmds []workflow.ValidationCommand) (checkResult, error) {
	v := step.Validate
	cctx := ctx
	if v.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, v.Timeout)
		defer cancel()
	}
	var out []byte
	for i, c := range cmds {
		res := x.validationCommand(cctx, step, r, c, v.ResultFile == nil && i == len(cmds)-1)
		switch {
		case res.Failed() && ctx.Err() == nil && cctx.Err() != nil:
			return checkResult{}, fmt.Errorf("validate: the check did not finish within validate.timeout (%s)", v.Timeout)
		case res.Failed() && ctx.Err() != nil:
			return checkResult{}, context.Cause(ctx)
		case res.Failed():
			return failedCheck(i+1, res.Message()), nil
		}
		out = res.stdout
	}
	if v.ResultFile == nil {
		if !isJSONObject(out) {
			return checkResult{completion: 100, fields: map[string]any{"status": "complete"}}, nil
		}
		return parseCheck(out, "the check's stdout")
	}
	_, path, err := x.stepPath(step, r, step.Validate.ResultFile, "validate.result_file")
	if err != nil {
		return checkResult{}, err
	}
	data, err := workflow.ReadNamedFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkResult{}, fmt.Errorf("validate: the check wrote no result_file %s", path)
	}
	if err != nil {
		// %v: a result file that is not a regular file fails the step
		// (exit 1); the same error of a workflow file is a usage error.
		return checkResult{}, fmt.Errorf("validate: result_file: %v", err)
	}
	return parseCheck(data, "result_file "+path)
}

// stepPath reads a path a step's key names (validate.result_file,
// output): name is the key's text interpolated without shell escaping,
// path is name relative to the step's directory.
func (x *Executor) stepPath(step *workflow.Step, r Run, t *interp.Template, key string) (name, path string, err error) {
	name, err = t.Expand(r.Scope.PlainLookup(), interp.Plain)
	if err != nil {
		return "", "", fmt.Errorf("interpolation: %s: %w", key, err)
	}
	_, dir, err := x.stepEnv(step, r, 1, nil)
	if err != nil || filepath.IsAbs(name) {
		return name, name, err
	}
	return name, filepath.Join(dir, name), nil
}

// failedCheck is the result of a check whose command number n failed: 0%
// complete, the failure as what is missing, so that on_incomplete's
// commands can fix what the check found (Prodigy's page runs cargo test as
// a check).
func failedCheck(n int, message string) checkResult {
	missing := fmt.Sprintf("check command %d failed: %s", n, message)
	return checkResult{fields: map[string]any{"status": "incomplete", "missing": []any{missing}}}
}

// isJSONObject reports whether a check's stdout is meant as its result: a
// JSON object (valid or not). Any other output is a pass/fail check's
// log, and its exit status is the result.
func isJSONObject(out []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(out), []byte("{"))
}

// parseCheck reads a check's JSON object (from source, for messages).
func parseCheck(data []byte, source string) (checkResult, error) {
	const want = `the check must write a JSON object with completion_percentage, e.g. {"completion_percentage": 80, "gaps": {...}}`
	if len(bytes.TrimSpace(data)) == 0 {
		return checkResult{}, fmt.Errorf("validate: %s is empty: %s", source, want)
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return checkResult{}, fmt.Errorf("validate: %s is not JSON (%v): %s", source, err, want)
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return checkResult{}, fmt.Errorf("validate: %s is not a JSON object: %s", source, want)
	}
	var pct float64
	switch n := fields["completion_percentage"].(type) {
	case int64:
		pct = float64(n)
	case float64:
		pct = n
	default:
		return checkResult{}, fmt.Errorf("validate: %s has no completion_percentage (a number from 0 to 100): %s", source, want)
	}
	if pct < 0 || pct > 100 {
		return checkResult{}, fmt.Errorf("validate: %s: completion_percentage must be between 0 and 100, not %g", source, pct)
	}
	return checkResult{completion: pct, fields: fields}, nil
}

// fillGaps runs on_incomplete's commands once, with ${validation.*} from
// what the check found.
func (x *Executor) fillGaps(ctx context.Context, step *workflow.Step, r Run, found checkResult, attempt int) error {
	in := step.Validate.OnIncomplete
	hr := r
	hr.Scope = r.Scope.Child()
	hr.Scope.Set(workflow.ValidationVar, found.vars(attempt))
	var commits *commitTracker
	if in.CommitRequired {
		t, err := x.trackCommits(ctx, requiringCommit(step), r)
		if err != nil {
			return fmt.Errorf("on_incomplete attempt %d: %w", attempt, err)
		}
		commits = t
	}
	for i, c := range in.Commands {
		h := x.validationCommand(ctx, step, hr, c, false)
		x.emit(r, eventlog.HandlerCompleted(r.label(step), i+1, h.ExitCode))
		if h.Failed() {
			return fmt.Errorf("on_incomplete attempt %d: command %d failed: %s", attempt, i+1, h.Message())
		}
	}
	if commits != nil {
		if h := commits.check(ctx, commandResult{}); h.Failed() {
			return fmt.Errorf("on_incomplete attempt %d: %s", attempt, h.Message())
		}
	}
	return nil
}

// validationCommand runs one command of a check or of on_incomplete,
// which with commit_required fails unless it makes a git commit.
func (x *Executor) validationCommand(ctx context.Context, step *workflow.Step, r Run, c workflow.ValidationCommand, capture bool) commandResult {
	if !c.CommitRequired {
		return x.runCommand(ctx, step, c.Command, r, 1, capture)
	}
	t, err := x.trackCommits(ctx, requiringCommit(step), r)
	if err != nil {
		return commandResult{Outcome: retryv2.Outcome{Attempt: 1, Kind: retryv2.KindSpawn, ExitCode: -1, Err: err}}
	}
	res := x.runCommand(ctx, step, c.Command, r, 1, capture)
	if res.Failed() {
		return res
	}
	return t.check(ctx, res)
}

// requiringCommit is step as a command that must commit sees it: its
// directory and environment, commit_required and no auto_commit.
func requiringCommit(step *workflow.Step) *workflow.Step {
	s := *step
	s.CommitRequired, s.AutoCommit = true, false
	return &s
}
