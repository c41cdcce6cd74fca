package cmd

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// Exit codes, documented in `runner --help`.
const (
	ExitOK         = 0
	ExitFailed     = 1
	ExitUsage      = 2
	ExitItemsInDLQ = 3
	ExitBudget     = 4
	exitCodesHelp  = `Exit codes:
  0    success (MapReduce: every item succeeded or was skipped by policy)
  1    failed: a step failed, setup/reduce failed, the error policy stopped the job,
       or the merge asked for (--merge, merge_back) was not made
  2    usage error, invalid workflow, or an environment that cannot be resolved
       (env command, secret, env file, profile); nothing ran
  3    MapReduce finished but items are in the dead-letter queue
  4    stopped by its budget: the agents spent budget.max_cost_usd or max_tokens
       (state saved; runner resume JOB --budget-usd N goes on)
  129  interrupted by SIGHUP (state saved; runner resume JOB continues)
  130  interrupted by SIGINT (state saved; runner resume JOB continues)
  143  interrupted by SIGTERM (state saved; runner resume JOB continues)`
)

// Interrupted is the cancel cause when the process receives a signal.
type Interrupted struct{ Signal syscall.Signal }

func (i Interrupted) Error() string {
	return fmt.Sprintf("interrupted by %s", proc.SignalName(i.Signal))
}

// usageError marks a mistake in how runner was called.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the one place that maps an error to the process exit code.
func exitCode(err error) int {
	var (
		interrupted Interrupted
		stopped     *mapreduce.StoppedError
		usage       usageError
		parse       workflow.ParseErrors
		parseOne    *workflow.ParseError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &interrupted):
		return 128 + int(interrupted.Signal)
	case errors.Is(err, context.Canceled):
		return 128 + int(syscall.SIGINT)
	case errors.As(err, new(job.ItemsInDLQ)):
		return ExitItemsInDLQ
	case errors.As(err, &stopped) && stopped.Budget():
		return ExitBudget
	case errors.As(err, &usage), errors.As(err, &parse), errors.As(err, &parseOne),
		errors.Is(err, state.ErrNotFound), errors.Is(err, state.ErrAmbiguous), errors.Is(err, state.ErrExists), errors.Is(err, state.ErrBuried), errors.Is(err, state.ErrInvalidID), errors.Is(err, dlq.ErrNotFound),
		errors.Is(err, job.ErrCompleted), errors.Is(err, jobenv.ErrMissingSecrets),
		errors.Is(err, jobenv.ErrNotSecret), errors.Is(err, job.ErrVarUsed), errors.Is(err, workflow.ErrNotRegular), errors.As(err, new(*jobenv.Error)):
		return ExitUsage
	}
	return ExitFailed
}
