package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/state"
)

// jobID returns the id of the job that arg names in the state dir: an id,
// a unique prefix of one, or latest (also -): the job started last, which
// it names on stderr. A job it cannot find is an error naming the state
// dir it looked in.
func (g *globalOptions) jobID(arg string) (string, error) {
	store := g.store()
	var id string
	var err error
	if arg == "latest" || arg == "-" {
		if id, err = store.Latest(); err == nil {
			fmt.Fprintf(g.stderr, "runner: the latest job is %s\n", id)
		}
	} else {
		id, err = store.Find(arg)
	}
	if errors.Is(err, state.ErrNotFound) && !errors.Is(err, state.ErrBuried) {
		dir, _ := filepath.Abs(store.Dir)
		return "", fmt.Errorf("%w in the state dir %s (RUNNER_STATE_DIR or --state-dir names another)", err, dir)
	}
	return id, err
}

// takesJob makes c's first argument, when given, a job as jobID reads
// it (c's RunE gets the job's id), which the shell completes.
func takesJob(g *globalOptions, c *cobra.Command) *cobra.Command {
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			id, err := g.jobID(args[0])
			if err != nil {
				return err
			}
			args = append([]string{id}, args[1:]...)
		}
		return run(c, args)
	}
	return completesJobs(g, c)
}

// completesJobs has the shell complete c's first argument with the ids
// of the state dir's jobs.
func completesJobs(g *globalOptions, c *cobra.Command) *cobra.Command {
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return g.completeJobs(toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return c
}

// completeJobs returns the ids of the state dir's jobs that start with
// prefix, newest first, each described by its workflow and status.
func (g *globalOptions) completeJobs(prefix string) []cobra.Completion {
	jobs, err := g.store().List()
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for i := len(jobs) - 1; i >= 0; i-- {
		m := jobs[i]
		if !strings.HasPrefix(m.ID, prefix) {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(m.ID, strings.TrimSpace(m.Workflow+" "+string(m.Status))))
	}
	return out
}
