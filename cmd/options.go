package cmd

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow"
)

// outputOptions are the flags of the commands that run items and report a
// summary (run, resume, dlq retry).
type outputOptions struct {
	Output   string
	Progress string
}

func (o *outputOptions) AddFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.Output, "output", "text", "summary format: text or json (json: one document on stdout)")
	f.StringVar(&o.Progress, "progress", "auto", "live progress: auto, always or never")
}

func (o outputOptions) validate() error {
	if o.Output != "text" && o.Output != "json" {
		return usagef("--output must be text or json, not %q", o.Output)
	}
	switch o.Progress {
	case "auto", "always", "never":
		return nil
	}
	return usagef("--progress must be auto, always or never, not %q", o.Progress)
}

func (o outputOptions) asJSON() bool { return o.Output == "json" }

// parallelOptions are the flags of the commands that run MapReduce items
// (run, resume, dlq retry).
type parallelOptions struct {
	MaxParallel int    // 0: the workflow's map.max_parallel
	Dispatch    string // where items run (hidden): local or agents; "": RUNNER_DISPATCH
	// NATS sends the items to NATS workers; MaxDeliveries is how many
	// deliveries of one attempt's task they get (0: the workflow's, else
	// the default).
	NATS          natsOptions
	MaxDeliveries int

	nats *natsRun // connected by connectNATS; nil: items run here
}

func (o *parallelOptions) AddFlags(c *cobra.Command) {
	c.Flags().Var((*positiveInt)(&o.MaxParallel), "max-parallel", "items at once (default: the workflow's map.max_parallel; on NATS, the tasks out at once)")
	c.Flags().StringVar(&o.Dispatch, "dispatch", "", "where items run: local or agents (env RUNNER_DISPATCH; default local)")
	c.Flags().MarkHidden("dispatch")
	o.NATS.AddFlags(c, "run the map's items on NATS workers reached at this URL (a comma-separated list for a cluster)")
	c.Flags().Var((*positiveInt)(&o.MaxDeliveries), "max-deliveries", "on NATS, deliveries of one attempt's task before it fails as kind lost (default: the workflow's distributed.max_deliveries, else 4)")
}

// positiveInt is an int flag that refuses values below 1 when it is parsed,
// so that a refused value is a flag error like any other.
type positiveInt int

func (p *positiveInt) String() string { return strconv.Itoa(int(*p)) }
func (p *positiveInt) Type() string   { return "int" }

func (p *positiveInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return errors.New("not an integer")
	case n < 1:
		return errors.New("must be at least 1")
	}
	*p = positiveInt(n)
	return nil
}

// fileOptions are the flags of the commands that read a workflow file
// (run, validate): --profile, the profile of its profiles: to apply, and
// --strict, which makes the file's warnings errors.
type fileOptions struct {
	Profile string
	Strict  bool
}

func (o *fileOptions) AddFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.Profile, "profile", "", "apply this profile of the workflow's profiles: over its env (resume and dlq retry keep the job's)")
	c.Flags().BoolVar(&o.Strict, "strict", false, "refuse a file with warnings (keys that have no effect, Prodigy's older forms) as invalid")
}

// check prints the workflow's warnings on stderr, or with --strict
// returns them as errors, and reports a profile the workflow does not
// define, at its profiles: key.
func (o fileOptions) check(g *globalOptions, wf *workflow.Workflow) error {
	if err := workflow.CheckInputFile(wf); err != nil {
		return err
	}
	if o.Strict && len(wf.Warnings) > 0 {
		return wf.Warnings.Strict()
	}
	for _, w := range wf.Warnings {
		fmt.Fprintln(g.stderr, w)
	}
	if o.Profile == "" {
		return nil
	}
	_, err := wf.Profile(o.Profile)
	return err
}
