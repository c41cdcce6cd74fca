package cmd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/state"
)

type runOptions struct {
	JobID       string
	MaxParallel int
	Seed        string
	DryRun      bool
	Set         []string
	Output      string
	Progress    string
}

func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.JobID, "job-id", "", "id for the new job (default: NAME-DATE-TIME-RANDOM)")
	f.IntVar(&o.MaxParallel, "max-parallel", 0, "override map.max_parallel (MapReduce)")
	f.StringVar(&o.Seed, "seed", "", "seed for retry jitter, to reproduce a schedule exactly")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate and show what would run, run nothing")
	f.StringArrayVar(&o.Set, "set", nil, "set a variable: --set KEY=VALUE (overrides env:)")
	f.StringVar(&o.Output, "output", "text", "summary format: text or json (json: one document on stdout)")
	f.StringVar(&o.Progress, "progress", "auto", "live progress: auto, always or never")
}

func newRunCommand(g *globalOptions) *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow",
		Long:  "Run a workflow file as a new job. The job id is printed on stderr first (job: ID);\nits state, logs and events stay under the state dir for jobs, events and resume.\n\n" + exitCodesHelp,
		Example: `  runner run deploy.yml
  runner run --set REGION=eu-west-1 deploy.yml
  runner run --output json ci.yml > summary.json
  runner run --seed 42 flaky-api.yml`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runRun(c.Context(), g, o, args[0])
		},
	}
	o.addFlags(c)
	return c
}

func (o runOptions) validate() (vars map[string]string, seed *uint64, err error) {
	if o.Output != "text" && o.Output != "json" {
		return nil, nil, usagef("--output must be text or json, not %q", o.Output)
	}
	switch o.Progress {
	case "auto", "always", "never":
	default:
		return nil, nil, usagef("--progress must be auto, always or never, not %q", o.Progress)
	}
	if o.Seed != "" {
		n, err := strconv.ParseUint(o.Seed, 10, 64)
		if err != nil {
			return nil, nil, usagef("--seed must be a non-negative integer, not %q", o.Seed)
		}
		seed = &n
	}
	vars = map[string]string{}
	for _, kv := range o.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, usagef("--set wants KEY=VALUE, not %q", kv)
		}
		vars[k] = v
	}
	return vars, seed, nil
}

func runRun(ctx context.Context, g *globalOptions, o runOptions, file string) error {
	vars, seed, err := o.validate()
	if err != nil {
		return err
	}
	source, err := os.ReadFile(file)
	if err != nil {
		return usagef("%v", err)
	}
	wf, err := workflow.Parse(file, source)
	if err != nil {
		return err
	}
	if o.DryRun {
		return dryRun(g.stdout, wf)
	}
	ui := newTerminal(g, o.Output == "json")
	j, err := workflow.Start(wf, source, workflow.Options{
		Store: g.store(), JobID: o.JobID, Vars: vars, Seed: seed,
		Stdout: ui.commandStdout(), Stderr: g.stderr, Listener: ui.event,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "job: %s\n", j.State.Meta.ID)
	return finishStandard(ctx, ui, j)
}

// finishStandard runs a started or resumed standard job to its end and
// reports it.
func finishStandard(ctx context.Context, ui *terminal, j *workflow.Job) error {
	pr, err := j.RunStandard(ctx)
	status := workflow.StatusOf(ctx, err)
	code := exitCode(err)
	if status == state.Interrupted {
		code = exitCode(context.Cause(ctx))
	}
	if ferr := j.Finish(status, code, err, map[string]any{"succeeded": pr.Succeeded, "failed": pr.Failed, "skipped": pr.Skipped}); ferr != nil && err == nil {
		err = ferr
		status, code = state.Failed, ExitFailed
	}
	ui.summary(j, status, code, pr, err)
	if status == state.Interrupted {
		return alreadyReported(context.Cause(ctx))
	}
	if err != nil {
		return alreadyReported(err)
	}
	return nil
}
