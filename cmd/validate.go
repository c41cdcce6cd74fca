package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow"
)

func newValidateCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow files without running anything",
		Long:  "Parse and validate workflow files. Every problem is printed as FILE:LINE:COL: message;\nthe exit code is 2 when any file is invalid.",
		Example: `  runner validate deploy.yml
  runner validate workflows/*.yml`,
		Args: minArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			return runValidate(g, files)
		},
	}
}

func runValidate(g *globalOptions, files []string) error {
	var errs []error
	for _, f := range files {
		wf, err := workflow.Load(f)
		if err != nil {
			fmt.Fprintf(g.stderr, "%s\n", err)
			errs = append(errs, err)
			continue
		}
		if !g.Quiet {
			fmt.Fprintf(g.stdout, "%s: ok (%s workflow %q)\n", f, wf.Mode, wf.Name)
		}
	}
	if len(errs) > 0 {
		return alreadyReported(errors.Join(errs...))
	}
	return nil
}
