package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runnerdev/runner/internal/printable"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// globalOptions are the flags every command takes.
type globalOptions struct {
	StateDir string
	Verbose  bool
	Quiet    bool
	NoColor  bool

	stdout, stderr io.Writer
	console        console // where runner asks questions
}

func (g *globalOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&g.StateDir, "state-dir", "", "directory holding jobs, logs and the DLQ (env RUNNER_STATE_DIR; default .runner)")
	f.BoolVarP(&g.Verbose, "verbose", "v", false, "show more: every attempt, retry decision and event")
	f.BoolVarP(&g.Quiet, "quiet", "q", false, "show only errors and the final summary")
	f.BoolVar(&g.NoColor, "no-color", false, "no colours in output (also NO_COLOR)")
}

func (g *globalOptions) store() state.Store {
	dir := g.StateDir
	if dir == "" {
		dir = os.Getenv("RUNNER_STATE_DIR")
	}
	if dir == "" {
		dir = ".runner"
	}
	return state.Store{Dir: dir}
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globalOptions{stdout: stdout, stderr: stderr, console: processConsole(stderr)}
	root := newRootCommand(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errReported) {
		printError(stderr, err)
	}
	return exitCode(err)
}

// errReported wraps an error whose message was already shown to the user.
var errReported = errors.New("reported")

type reported struct{ err error }

func (r reported) Error() string      { return r.err.Error() }
func (r reported) Unwrap() []error    { return []error{r.err, errReported} }
func alreadyReported(err error) error { return reported{err} }

// printError shows an error as runner: MESSAGE, each line prefixed.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "runner: %s\n", strings.ReplaceAll(printable.Text(err.Error()), "\n", "\nrunner: "))
}

func newRootCommand(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "runner",
		Short: "Run workflow files: shell steps with retries, MapReduce over many items, a dead-letter queue",
		Long: `runner runs workflow files (YAML or JSON, Prodigy's format): standard
workflows of shell steps, each with its own retry policy, and MapReduce
workflows that run one command template over many items in parallel, with
an error policy and a dead-letter queue for items that still fail.

` + exitCodesHelp,
		Example: `  runner run deploy.yml
  runner validate *.yml
  runner jobs
  runner resume deploy-20261122-101500-a1b2c3
  runner dlq retry resize-20261122-101500-a1b2c3`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE:          commandGroup,
	}
	root.Version = version()
	root.SetVersionTemplate("runner {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	g.addFlags(root)
	root.AddCommand(
		newRunCommand(g),
		newValidateCommand(g),
		newResumeCommand(g),
		newJobsCommand(g),
		newEventsCommand(g),
		newLogsCommand(g),
		newDLQCommand(g),
		newSchemaCommand(g),
		newReportCommand(g),
		newCompletionCommand(g),
		newVersionCommand(g),
		newWorkerCommand(g),
		newWatchdogCommand(),
		newAgentCommand(g),
	)
	root.AddCommand(prodigyCommands()...)
	return root
}

// flagError is a flag's error as a usage error (exit 2); an unknown flag
// gets the closest of c's flags as a did-you-mean.
func flagError(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return usageError{err}
	}
	var known []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	if s := workflow.Suggest(name, known); s != "" {
		err = fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return usageError{err}
}

// commandGroup is the RunE of a command that only groups subcommands:
// alone it shows its help; an unknown subcommand reaches it (with
// cobra.ArbitraryArgs, instead of cobra's untyped error) and is named, with
// the usage exit code.
func commandGroup(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usagef("%s; see %s --help", msg, c.CommandPath())
}

// exactArgs is cobra.ExactArgs with errors that map to the usage exit code.
func exactArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.ExactArgs(n)) }

func minArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.MinimumNArgs(n)) }

func rangeArgs(lo, hi int) cobra.PositionalArgs { return usageArgs(cobra.RangeArgs(lo, hi)) }

// usageArgs is rule, its error a usage error (exit 2).
func usageArgs(rule cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := rule(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
