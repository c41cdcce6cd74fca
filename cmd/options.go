package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/workflow"
)

// formatOptions are --json and --output text|json, its other spelling:
// the format of what a command prints on stdout.
type formatOptions struct {
	Output string
	JSON   bool
}

func (o *formatOptions) AddFlags(c *cobra.Command, what string) {
	f := c.Flags()
	f.BoolVar(&o.JSON, "json", false, "print "+what+" as one JSON document on stdout (= --output json)")
	f.StringVar(&o.Output, "output", "text", "format of "+what+": text or json")
}

func (o formatOptions) validate() error {
	if o.Output != "text" && o.Output != "json" {
		return usagef("--output must be text or json, not %q", o.Output)
	}
	return nil
}

func (o formatOptions) asJSON() bool { return o.JSON || o.Output == "json" }

// outputOptions are the flags of the commands that run items and report a
// summary (run, resume, dlq retry).
type outputOptions struct {
	formatOptions
	Progress string
}

func (o *outputOptions) AddFlags(c *cobra.Command) {
	o.formatOptions.AddFlags(c, "the summary")
	c.Flags().StringVar(&o.Progress, "progress", "auto", "live progress: auto, always or never")
}

func (o outputOptions) validate() error {
	if err := o.formatOptions.validate(); err != nil {
		return err
	}
	switch o.Progress {
	case "auto", "always", "never":
		return nil
	}
	return usagef("--progress must be auto, always or never, not %q", o.Progress)
}

// outFileFlag is -o/--out FILE, the file a command writes instead of
// stdout; --output FILE, its older spelling, stays as a hidden alias
// (elsewhere --output is a format, as --json).
func outFileFlag(c *cobra.Command, path *string, usage string) {
	f := c.Flags()
	f.StringVarP(path, "out", "o", "", usage)
	f.StringVar(path, "output", "", usage)
	_ = f.MarkHidden("output")
}

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
	// NATSBatch is the most tasks one NATS message carries (0: one).
	NATSBatch int
	// Tag shows the items' output as it comes, each line prefixed with
	// the item's id (GNU parallel's --tag), and the steps' with their
	// labels.
	Tag bool
	// Hard stops the items running when the budget stops the job,
	// instead of letting them finish.
	Hard bool

	nats *natsRun // connected by connectNATS; nil: items run here
}

func (o *parallelOptions) AddFlags(c *cobra.Command) {
	c.Flags().VarP((*positiveInt)(&o.MaxParallel), "max-parallel", "j", "items at once (default: the workflow's map.max_parallel; on NATS, the tasks out at once)")
	c.Flags().StringVar(&o.Dispatch, "dispatch", "", "where items run: local or agents (env RUNNER_DISPATCH; default local)")
	c.Flags().MarkHidden("dispatch")
	o.NATS.AddFlags(c, "run the map's items on NATS workers reached at this URL (a comma-separated list for a cluster; env RUNNER_NATS)",
		"the NATS worker pool the items go to (default: the workflow's distributed.queue, else "+natsconn.DefaultQueue+")")
	c.Flags().BoolVar(&o.Tag, "tag", false, "show the items' output as it comes, each line prefixed with the item's id and a tab (default: only in the item logs), and the steps' with their labels")
	c.Flags().BoolVar(&o.Hard, "hard", false, "when the budget stops the job, stop the items running too, as Ctrl-C does (they stay pending), instead of letting them finish")
	c.Flags().Var((*positiveInt)(&o.NATSBatch), "nats-batch", "on NATS, the most items one task message carries: the tasks ready while one is sent go together (default 1; a batch larger than a worker's free slots waits for them)")
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

// budgetUSD is the flag --budget-usd: a job's budget in USD, above 0,
// over the workflow's budget.max_cost_usd.
type budgetUSD float64

func addBudgetFlag(c *cobra.Command, b *budgetUSD, verb string) {
	c.Flags().Var(b, "budget-usd", verb+" the job's budget in USD (budget.max_cost_usd): no item starts once its agents spent it")
}

func (b *budgetUSD) String() string { return strconv.FormatFloat(float64(*b), 'f', -1, 64) }
func (b *budgetUSD) Type() string   { return "usd" }

func (b *budgetUSD) Set(s string) error {
	usd, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(usd) || math.IsInf(usd, 0):
		return errors.New("not a number of USD")
	case usd <= 0:
		return errors.New("must be above 0")
	}
	*b = budgetUSD(usd)
	return nil
}

// fileOptions are the flags of the commands that read a workflow file
// (run, validate): --profile, the profile of its profiles: to apply, and
// --strict, which makes the file's warnings errors.
type fileOptions struct {
	Profile   string
	Strict    bool
	Params    []string // --param KEY=VALUE
	ParamFile string   // --param-file FILE
}

func (o *fileOptions) AddFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.Profile, "profile", "", "apply this profile of the workflow's profiles: over its env (resume and dlq retry keep the job's)")
	c.Flags().BoolVar(&o.Strict, "strict", false, "refuse a file with warnings (keys runner does not know, keys that have no effect, Prodigy's older forms) as invalid")
	c.Flags().StringArrayVar(&o.Params, "param", nil, "a parameter of a composed workflow (Prodigy's parameters:, template with:): --param KEY=VALUE, VALUE read as JSON when it is (3, true, [1,2]), else as text")
	c.Flags().StringVar(&o.ParamFile, "param-file", "", "a JSON or YAML file of a composed workflow's parameters (a mapping); --param values win")
}

// params are the values of --param-file and --param (which win).
func (o fileOptions) params() (map[string]any, error) {
	params := map[string]any{}
	if o.ParamFile != "" {
		data, err := workflow.ReadNamedFile(o.ParamFile)
		if err != nil {
			return nil, usageError{err}
		}
		if err := yaml.Unmarshal(data, &params); err != nil {
			return nil, usagef("--param-file %s: not a mapping of parameters: %v", o.ParamFile, err)
		}
	}
	for _, kv := range o.Params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--param wants KEY=VALUE, not %q", kv)
		}
		var value any
		if json.Unmarshal([]byte(v), &value) != nil {
			value = v
		}
		params[k] = value
	}
	return params, nil
}

// check prints the workflow's warnings on stderr and returns its other
// problems (problems).
func (o fileOptions) check(g *globalOptions, wf *workflow.Workflow) error {
	warnings, err := o.problems(wf)
	for _, w := range warnings {
		fmt.Fprintln(g.stderr, w)
	}
	return err
}

// load reads and parses a workflow file named on the command line (see
// loadWorkflow); with --strict the warnings among its errors are errors
// too.
func (o fileOptions) load(file string, params map[string]any) (*workflow.Workflow, []byte, error) {
	wf, source, err := loadWorkflow(file, params)
	if pe := workflow.ParseErrors(nil); o.Strict && errors.As(err, &pe) {
		err = pe.Strict()
	}
	return wf, source, err
}

// problems returns the workflow's warnings and, as its error, a map.input
// file that is not there, the warnings made errors with --strict or a
// profile the workflow does not define (at its profiles: key).
func (o fileOptions) problems(wf *workflow.Workflow) (workflow.ParseErrors, error) {
	if err := workflow.CheckInputFile(wf); err != nil {
		return nil, err
	}
	if o.Strict && len(wf.Warnings) > 0 {
		return nil, wf.Warnings.Strict()
	}
	if o.Profile == "" {
		return wf.Warnings, nil
	}
	_, err := wf.Profile(o.Profile)
	return wf.Warnings, err
}
