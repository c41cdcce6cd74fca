package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
)

type resumeOptions struct {
	outputOptions
	parallelOptions
	JUnit    string
	Set      []string
	Workflow string // --workflow FILE: go on with this file, not the stored copy
	Merge    bool
	Yes      bool // -y: answer yes to the merge question (Prodigy's -y)
	// BudgetUSD (--budget-usd) replaces the job's budget in USD: a job
	// its budget stopped goes on.
	BudgetUSD budgetUSD
}

func (o *resumeOptions) AddFlags(c *cobra.Command) {
	o.outputOptions.AddFlags(c)
	o.parallelOptions.AddFlags(c)
	c.Flags().StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to this file when the job ends")
	c.Flags().StringArrayVar(&o.Set, "set", nil, "give a secret again, or set a variable no finished step used: --set KEY=VALUE")
	c.Flags().StringVar(&o.Workflow, "workflow", "", "go on with this workflow file (fixed) instead of the job's stored copy, when it fits what the job has done")
	c.Flags().BoolVar(&o.Merge, "merge", false, mergeFlagHelp)
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, yesFlagHelp)
	addBudgetFlag(c, &o.BudgetUSD, "raise (or set)")
}

func newResumeCommand(g *globalOptions) *cobra.Command {
	var o resumeOptions
	c := &cobra.Command{
		Use:   "resume [JOB]",
		Short: "Continue a stopped, failed or interrupted job",
		Long: `Continue a job from its checkpoint, using the workflow copy stored with it
(not the file it was started from). Finished steps are not run again; their
captured variables are restored. Secrets are not stored with the job: give
them again in the environment or with --set.

After fixing the file (a timeout, a command), --workflow FILE goes on with
it: its finished steps must be the same commands at the same places, and a
MapReduce job's map.input and item options stay (its items are stored); it
becomes the job's copy, the old one kept beside it. --set NAME=VALUE sets
a variable that no finished step used. A job its budget stopped (exit
code 4) goes on with --budget-usd N, its new budget in USD.

JOB is a job id, a prefix of one that names one job, or latest (also -);
with no JOB, resume continues the latest job of the state dir, saying which.`,
		Example: `  runner resume deploy-20261122-101500-a1b2c3
  runner resume deploy-2026112     # a prefix that names one job
  runner resume deploy-2026112 --workflow deploy.yml   # go on with the fixed file
  runner resume review-2026112 --budget-usd 40         # a job its budget stopped, with more
  runner resume                    # the latest job`,
		Args: rangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			arg := "latest"
			if len(args) > 0 {
				arg = args[0]
			}
			id, err := g.jobID(arg)
			if err != nil {
				return err
			}
			return runResume(c.Context(), g, o, id)
		},
	}
	o.AddFlags(c)
	return completesJobs(g, c)
}

func runResume(ctx context.Context, g *globalOptions, o resumeOptions, id string) error {
	if err := o.outputOptions.validate(); err != nil {
		return err
	}
	if err := o.parallelOptions.validate(); err != nil {
		return err
	}
	vars, err := parseSet(o.Set)
	if err != nil {
		return err
	}
	if o.Merge {
		if err := checkResumeMerge(g, id); err != nil {
			return err
		}
	}
	unmerged, err := resumeCompleted(ctx, g, id, o.Merge || o.Yes)
	if err != nil {
		return err
	}
	replace, err := resumeWorkflow(g, o.Workflow)
	if err != nil {
		return err
	}
	ui := newTerminal(g, o.asJSON(), o.Progress)
	j, err := job.Resume(id, job.Options{
		Context: ctx, Store: g.store(), Vars: vars, Stdout: ui.commandStdout(), Stderr: ui.commandStderr(), Tag: o.Tag, Listener: ui.event,
		Completed: unmerged, Replace: replace, BudgetUSD: float64(o.BudgetUSD),
	})
	if err != nil {
		return err
	}
	ui.follow(j)
	if err := o.parallelOptions.connectNATS(ctx, j.Workflow(), j.Meta().Dist); err != nil {
		_ = j.Finish(state.Failed, exitCode(err), err, nil) // resumed, then stopped before anything ran
		return err
	}
	defer o.nats.close()
	fmt.Fprintf(g.stderr, "job: %s (resumed)\n", j.ID())
	if file := changedFile(j); file != "" {
		fmt.Fprintf(g.stderr, "runner: %s changed since the job started; this resume runs the job's stored copy (to go on with the file: runner resume %s --workflow %s)\n", file, j.ID(), file)
	}
	if o.nats != nil {
		fmt.Fprintf(g.stderr, "%s\n", o.nats.describe())
	}
	merge := o.Merge || o.Yes && j.Workflow().RunsInWorktree() && j.Meta().TargetBranch != ""
	return finishJob(ctx, ui, j, o.parallelOptions, o.JUnit, merge)
}

// resumeWorkflow reads the file of resume --workflow, printing its
// warnings; nil when none is given.
func resumeWorkflow(g *globalOptions, file string) (*job.Replacement, error) {
	if file == "" {
		return nil, nil
	}
	wf, source, err := loadWorkflow(file, nil)
	if err != nil {
		return nil, err
	}
	for _, w := range wf.Warnings {
		fmt.Fprintln(g.stderr, w)
	}
	return &job.Replacement{Workflow: wf, Source: source}, nil
}
