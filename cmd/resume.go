package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/state"
)

type resumeOptions struct {
	outputOptions
	parallelOptions
	JUnit string
	Set   []string
	Merge bool
	Yes   bool // -y: answer yes to the merge question (Prodigy's -y)
}

func (o *resumeOptions) AddFlags(c *cobra.Command) {
	o.outputOptions.AddFlags(c)
	o.parallelOptions.AddFlags(c)
	c.Flags().StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to this file when the job ends")
	c.Flags().StringArrayVar(&o.Set, "set", nil, "give a secret again: --set KEY=VALUE")
	c.Flags().BoolVar(&o.Merge, "merge", false, mergeFlagHelp)
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, yesFlagHelp)
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

JOB is a job id, a prefix of one that names one job, or latest (also -);
with no JOB, resume continues the latest job of the state dir, saying which.`,
		Example: `  runner resume deploy-20261122-101500-a1b2c3
  runner resume deploy-2026112     # a prefix that names one job
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
	ui := newTerminal(g, o.asJSON(), nil, o.Progress)
	j, err := job.Resume(id, job.Options{
		Store: g.store(), Vars: vars, Stdout: ui.commandStdout(), Stderr: ui.commandStderr(), Listener: ui.event,
		Completed: unmerged,
	})
	if err != nil {
		return err
	}
	ui.setWorkflow(j.Workflow())
	if err := o.parallelOptions.connectNATS(ctx, j.Workflow(), j.Meta().Dist); err != nil {
		_ = j.Finish(state.Failed, exitCode(err), err, nil) // resumed, then stopped before anything ran
		return err
	}
	defer o.nats.close()
	fmt.Fprintf(g.stderr, "job: %s (resumed)\n", j.ID())
	if o.nats != nil {
		fmt.Fprintf(g.stderr, "%s\n", o.nats.describe())
	}
	merge := o.Merge || o.Yes && j.Workflow().RunsInWorktree() && j.Meta().TargetBranch != ""
	return finishJob(ctx, ui, j, o.parallelOptions, o.JUnit, merge)
}
