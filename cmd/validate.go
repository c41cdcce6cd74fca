package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCommand(g *globalOptions) *cobra.Command {
	var o fileOptions
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow files without running anything",
		Long:  "Parse and validate workflow files. Every problem is printed as FILE:LINE:COL: message;\nthe exit code is 2 when any file is invalid.",
		Example: `  runner validate deploy.yml
  runner validate workflows/*.yml
  runner validate --profile production deploy.yml`,
		Args: minArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			return runValidate(g, o, files)
		},
	}
	o.AddFlags(c)
	return c
}

func runValidate(g *globalOptions, o fileOptions, files []string) error {
	var errs []error
	for _, f := range files {
		wf, _, err := loadWorkflow(f)
		if err == nil {
			err = o.check(g, wf)
		}
		if err != nil {
			if errors.As(err, new(usageError)) {
				// a file it cannot read, said as run says it
				printError(g.stderr, err)
			} else {
				fmt.Fprintf(g.stderr, "%s\n", err) // FILE:LINE:COL: message, one a line
			}
			errs = append(errs, err)
			continue
		}
		if !g.Quiet {
			fmt.Fprintf(g.stdout, "%s: ok (%s workflow %q%s)\n", f, wf.Mode, wf.Name, described(wf.Description))
		}
	}
	if len(errs) > 0 {
		return alreadyReported(errors.Join(errs...))
	}
	return nil
}

// described is a workflow's description as validate shows it after the
// name, or "".
func described(desc string) string {
	if desc == "" {
		return ""
	}
	return ": " + desc
}
