package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/plan"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

type runOptions struct {
	outputOptions
	parallelOptions
	fileOptions
	JobID  string
	Seed   string
	DryRun bool
	Set    []string
	// Arg is --arg (and Args Prodigy's spelling, --args): the value of
	// $ARG, as in Prodigy's prodigy run FILE --args VALUE.
	Arg, Args []string
	JUnit     string
	Merge     bool
	Yes       bool // -y: answer yes to the merge question (Prodigy's -y)
	InPlace   bool // run a standard workflow's commands in the checkout
	BudgetUSD budgetUSD
	prodigy   prodigyRunFlags
}

func (o *runOptions) AddFlags(cmd *cobra.Command) {
	o.outputOptions.AddFlags(cmd)
	o.parallelOptions.AddFlags(cmd)
	o.fileOptions.AddFlags(cmd)
	o.prodigy.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.JobID, "job-id", "", "id for the new job (default: NAME-DATE-TIME-RANDOM)")
	f.StringVar(&o.Seed, "seed", "", "seed for retry jitter, to reproduce a schedule exactly")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate and show what would run, run nothing")
	f.StringArrayVar(&o.Set, "set", nil, "set a variable: --set KEY=VALUE (overrides env:)")
	f.StringArrayVarP(&o.Arg, "arg", "a", nil, "set $ARG, as Prodigy's --args does: the same as --set ARG=VALUE")
	f.StringArrayVar(&o.Args, "args", nil, "Prodigy's spelling of --arg")
	f.MarkHidden("args")
	f.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to this file when the job ends")
	f.BoolVar(&o.Merge, "merge", false, mergeFlagHelp)
	f.BoolVarP(&o.Yes, "yes", "y", false, yesFlagHelp)
	addBudgetFlag(cmd, &o.BudgetUSD, "set")
	f.BoolVar(&o.InPlace, "in-place", false, "run a standard workflow's commands in your checkout, not in a job worktree (as isolation: none)")
}

func newRunCommand(g *globalOptions) *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow",
		Long:  "Run a workflow file as a new job. The job id is printed on stderr first (job: ID);\nits state, logs and events stay under the state dir for jobs, events and resume.\n\n" + exitCodesHelp,
		Example: `  runner run deploy.yml
  runner run --set REGION=eu-west-1 deploy.yml
  runner run --arg 42 --merge implement.yml   # $ARG is 42, as with Prodigy's --args
  runner run --profile production deploy.yml
  runner run --output json ci.yml > summary.json
  runner run --seed 42 flaky-api.yml`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runRun(c.Context(), g, o, args[0])
		},
	}
	o.AddFlags(c)
	return c
}

func (o runOptions) validate() (vars map[string]string, seed *uint64, err error) {
	if err := o.outputOptions.validate(); err != nil {
		return nil, nil, err
	}
	if err := o.prodigy.validate(); err != nil {
		return nil, nil, err
	}
	if o.Seed != "" {
		n, err := strconv.ParseUint(o.Seed, 10, 64)
		if err != nil {
			return nil, nil, usagef("--seed must be a non-negative integer, not %q", o.Seed)
		}
		seed = &n
	}
	if err := o.parallelOptions.validate(); err != nil {
		return nil, nil, err
	}
	if vars, err = parseSet(o.Set); err != nil {
		return nil, nil, err
	}
	return vars, seed, setArg(vars, append(o.Arg, o.Args...))
}

// setArg sets ARG to the value of --arg: Prodigy's $ARG, which its files
// read (claude: "/prodigy-implement-spec $ARG"), and ARG_1 and
// PRODIGY_ARG as Prodigy does (argument_processing.rs), unless --set
// gives them. Prodigy runs the file once for each --args value; a runner
// job runs it once, so one value is taken.
func setArg(vars map[string]string, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) > 1:
		return usagef("--arg is given %d times, and a job runs the workflow once, with one $ARG: run it once for each value", len(args))
	}
	if v, ok := vars["ARG"]; ok && v != args[0] {
		return usagef("--arg %s and --set ARG=%s give ARG two values", args[0], v)
	}
	for _, name := range []string{"ARG", "ARG_1", "PRODIGY_ARG"} {
		if _, ok := vars[name]; !ok {
			vars[name] = args[0]
		}
	}
	return nil
}

// parseSet reads --set KEY=VALUE flags.
func parseSet(set []string) (map[string]string, error) {
	vars := map[string]string{}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--set wants KEY=VALUE, not %q", kv)
		}
		vars[k] = v
	}
	return vars, nil
}

func runRun(ctx context.Context, g *globalOptions, o runOptions, file string) error {
	vars, seed, err := o.validate()
	if err != nil {
		return err
	}
	params, err := o.fileOptions.params()
	if err != nil {
		return err
	}
	wf, source, err := o.fileOptions.load(file, params)
	if err != nil {
		return err
	}
	if err := o.fileOptions.check(g, wf); err != nil {
		return err
	}
	if err := placeWorkflow(ctx, wf, o.InPlace); err != nil {
		return err
	}
	if err := checkIsolation(ctx, g, wf); err != nil {
		return err
	}
	merge := o.Merge || o.Yes && wf.RunsInWorktree()
	if err := checkMerge(ctx, wf, merge); err != nil {
		return err
	}
	id, itemBranches, err := newJobID(ctx, wf, o.JobID)
	if err != nil {
		return err
	}
	if o.DryRun {
		if err := jobenv.Check(ctx, wf, vars, o.Profile); err != nil {
			return err
		}
		wf.Budget = wf.Budget.WithCost(float64(o.BudgetUSD))
		p := plan.New(wf, seed, executor.ResolveAgent(wf.Agent, os.Environ()))
		if o.asJSON() {
			return writeJSON(g.stdout, p)
		}
		return p.WriteText(g.stdout)
	}
	if err := o.parallelOptions.connectNATS(ctx, wf, nil); err != nil {
		return err
	}
	defer o.nats.close()
	if o.nats != nil {
		if err := refuseCarriedSecrets(ctx, wf, source, vars, o.Profile); err != nil {
			return err
		}
	}
	target, err := targetBranch(ctx, wf)
	if err != nil {
		return err
	}
	ui := newTerminal(g, o.asJSON(), o.Progress)
	j, err := job.Start(wf, source, job.Options{
		Context: ctx, Store: g.store(), JobID: id, Vars: vars, Seed: seed, Profile: o.Profile,
		Stdout: ui.commandStdout(), Stderr: ui.commandStderr(), Tag: o.Tag, Listener: ui.event,
		ItemBranches: itemBranches, TargetBranch: target, BudgetUSD: float64(o.BudgetUSD),
	})
	if err != nil {
		return err
	}
	ui.follow(j)
	fmt.Fprintf(g.stderr, "job: %s\n", j.ID())
	if o.nats != nil {
		fmt.Fprintf(g.stderr, "%s\n", o.nats.describe())
	}
	return finishJob(ctx, ui, j, o.parallelOptions, o.JUnit, merge)
}

// loadWorkflow reads and parses a workflow file named on the command line,
// composing it with params (--param) when it uses Prodigy's composition
// (the job stores the composed document, wf.Composed); a file it cannot
// read is a usage error.
func loadWorkflow(file string, params map[string]any) (*workflow.Workflow, []byte, error) {
	source, err := workflow.ReadFile(file)
	if err != nil {
		return nil, nil, usageError{err}
	}
	wf, err := workflow.ParseWith(file, source, workflow.Options{Params: params})
	return wf, source, err
}

// finishJob runs a started or resumed job to its end, records how it
// ended and reports it. merge is --merge (or -y): the job branch of a job
// that succeeds is merged into the branch it started on; without it (or
// merge_back: true) runner asks on a terminal.
func finishJob(ctx context.Context, ui *terminal, j *job.Job, par parallelOptions, junit string, merge bool) error {
	var (
		res jobResult
		err error
	)
	merge = merge || j.Workflow().MergeBack
	ending := workspace.Ending{Merge: merge, Ask: ui.askMerge}
	if j.Workflow().Mode == workflow.MapReduce {
		if par.nats != nil {
			defer par.nats.showQueue(ui.display)()
		}
		var sum mapreduce.Summary
		q := jobdlq.Open(ctx, j.ID(), j.Layout().DLQ, ui.g.stderr)
		sum, err = mapreduce.Run(ctx, j, mapreduce.Options{MaxParallel: par.MaxParallel, Dispatcher: par.dispatcher(ui.g, j, par.live(ui)), DLQ: q,
			Ending: ending, Hard: par.Hard})
		res.items, res.end = &sum.Items, sum.End
		if err == nil || errors.As(err, new(*mapreduce.StoppedError)) { // the map ran to its end and wrote its counts
			if serr := q.MarkSettled(j.Layout().ItemStates, j.UpdateMeta); serr != nil {
				err = errors.Join(err, serr)
			}
		}
		if cerr := q.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if err == nil && sum.Items.DLQ > 0 {
			err = job.ItemsInDLQ{N: sum.Items.DLQ, Job: j.ID()}
		}
	} else if j.Workflow().RunsInWorktree() {
		res.steps, res.end, err = j.RunInWorktree(ctx, ending)
	} else {
		res.steps, err = j.RunStandard(ctx)
	}
	res.status = job.StatusOf(ctx, err)
	res.code = exitCode(err)
	var stopped *mapreduce.StoppedError
	switch {
	case res.status == state.Interrupted:
		res.code = exitCode(context.Cause(ctx))
		err = context.Cause(ctx)
	case errors.As(err, &stopped):
		res.status = state.Stopped
	case errors.As(err, new(job.ItemsInDLQ)):
		res.status = state.Completed
	}
	err = j.Secrets().MaskError(err) // the one error recorded and shown
	fields := map[string]any{"succeeded": res.steps.Succeeded, "failed": res.steps.Failed, "skipped": res.steps.Skipped}
	if res.items != nil {
		fields = map[string]any{"items": res.items}
	}
	if ferr := j.Finish(res.status, res.code, err, fields); ferr != nil && err == nil {
		err = ferr
		res.status, res.code = state.Failed, ExitFailed
	}
	if junit != "" {
		if jerr := writeJUnit(junit, j); jerr != nil {
			fmt.Fprintf(ui.g.stderr, "runner: junit report: %v\n", jerr)
		}
	}
	res.err = err
	ui.summary(j, res, merge)
	if err != nil {
		return alreadyReported(err)
	}
	return nil
}

// jobResult is how a job run ended.
type jobResult struct {
	status state.Status
	code   int
	steps  job.PhaseResult   // standard workflows
	items  *state.ItemCounts // MapReduce workflows
	end    workspace.End     // its job branch and final merge (Workflow.RunsInWorktree)
	err    error
}
