package cmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Prodigy's command line, where runner's differs (SPEC §12.11): each
// flag and command a Prodigy user types that runner does not have is
// answered with one line saying what runner does instead, with the usage
// exit code, never "unknown flag".

// prodigyRunFlags are Prodigy's run flags that runner does not have,
// hidden from --help.
type prodigyRunFlags struct {
	maxIterations, path string
	patterns            []string
}

func (o *prodigyRunFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVarP(&o.maxIterations, "max-iterations", "n", "", "Prodigy's runs of the workflow (not runner's)")
	f.StringArrayVar(&o.patterns, "map", nil, "Prodigy's file patterns to run the workflow for (not runner's)")
	f.StringVarP(&o.path, "path", "p", "", "Prodigy's repository to run in (not runner's)")
	for _, name := range []string{"max-iterations", "map", "path"} {
		f.MarkHidden(name)
	}
}

// validate refuses the Prodigy flags given, saying what runner does
// instead.
func (o prodigyRunFlags) validate() error {
	switch {
	case o.maxIterations != "":
		return usagef("-n/--max-iterations %s is Prodigy's: a runner job runs the workflow once; run it again, or N times from the shell: for i in $(seq %s); do runner run FILE || break; done", o.maxIterations, o.maxIterations)
	case len(o.patterns) > 0:
		return usagef("--map %s is Prodigy's (one run per matching file, $ARG the file): run one job per file, for f in %s; do runner run --arg \"$f\" FILE; done, or write a MapReduce workflow whose map.input lists the files", o.patterns[0], o.patterns[0])
	case o.path != "":
		return usagef("--path %s is Prodigy's: runner runs in the directory it is started in: cd %s && runner run FILE", o.path, o.path)
	}
	return nil
}

// prodigyCommands are Prodigy's commands that runner does not have, each
// answering with what runner does instead.
func prodigyCommands() []*cobra.Command {
	answers := []struct{ name, answer string }{
		{"resume-job", "resume-job is Prodigy's: runner resume JOB continues any job, MapReduce ones included, and runner dlq retry JOB runs its DLQ items again"},
		{"worktree", "runner has no worktree command: a job's worktree lives while the job runs and goes at its end, its work on the branch runner/JOB: list them with git branch --list 'runner/*', merge one with runner resume --merge JOB (or git merge --no-ff runner/JOB), delete one with git branch -D runner/JOB"},
		{"sessions", "runner's sessions are jobs: runner jobs lists them, runner events JOB shows one, runner resume JOB continues one"},
	}
	cmds := make([]*cobra.Command, len(answers))
	for i, a := range answers {
		cmds[i] = &cobra.Command{
			Use: a.name, Short: "Prodigy's " + a.name + ": what runner does instead", Hidden: true,
			DisableFlagParsing: true,
			RunE:               func(*cobra.Command, []string) error { return usagef("%s", a.answer) },
		}
	}
	return cmds
}
