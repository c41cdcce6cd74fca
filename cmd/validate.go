package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow"
)

type validateOptions struct {
	fileOptions
	formatOptions
}

func newValidateCommand(g *globalOptions) *cobra.Command {
	var o validateOptions
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow files without running anything",
		Long: `Parse and validate workflow files. Every problem is printed as FILE:LINE:COL: message
(a warning as FILE:LINE:COL: warning: message, among the errors of an invalid
file in file order); the exit code is 2 when any file is invalid. --json prints one document with every problem, for editors and CI.`,
		Example: `  runner validate deploy.yml
  runner validate workflows/*.yml
  runner validate --profile production deploy.yml
  runner validate --json deploy.yml`,
		Args: minArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			return runValidate(g, o, files)
		},
	}
	o.fileOptions.AddFlags(c)
	o.formatOptions.AddFlags(c, "the problems")
	return c
}

// validation is what validate --json prints.
type validation struct {
	Valid       bool             `json:"valid"`
	Files       []validatedFile  `json:"files"`
	Diagnostics []diagnosticJSON `json:"diagnostics"`
}

// validatedFile is one file's result.
type validatedFile struct {
	File  string `json:"file"`
	Valid bool   `json:"valid"`
	Mode  string `json:"mode,omitempty"`
	Name  string `json:"name,omitempty"`
}

// diagnosticJSON is one problem, positioned (line and column 0: the
// whole file, as a file that cannot be read).
type diagnosticJSON struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"` // error or warning
	Message  string `json:"message"`
}

func runValidate(g *globalOptions, o validateOptions, files []string) error {
	if err := o.formatOptions.validate(); err != nil {
		return err
	}
	out := validation{Valid: true, Files: []validatedFile{}, Diagnostics: []diagnosticJSON{}}
	var errs []error
	params, err := o.fileOptions.params()
	if err != nil {
		return err
	}
	for _, f := range files {
		wf, _, err := o.fileOptions.load(f, params)
		var warnings workflow.ParseErrors
		if err == nil {
			warnings, err = o.problems(wf)
		}
		res := validatedFile{File: f, Valid: err == nil}
		if wf != nil {
			res.Mode, res.Name = string(wf.Mode), wf.Name
		}
		out.Files = append(out.Files, res)
		out.Diagnostics = append(out.Diagnostics, diagnostics(f, err, warnings)...)
		if err != nil {
			out.Valid = false
			errs = append(errs, err)
		}
		if !o.asJSON() {
			printValidation(g, res, wf, err, warnings)
		}
	}
	if o.asJSON() {
		if err := writeJSON(g.stdout, out); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return alreadyReported(errors.Join(errs...))
	}
	return nil
}

// printValidation prints one file's result as text: its problems on
// stderr, and its description on stdout when it is valid.
func printValidation(g *globalOptions, res validatedFile, wf *workflow.Workflow, err error, warnings workflow.ParseErrors) {
	for _, w := range warnings {
		fmt.Fprintln(g.stderr, w)
	}
	switch {
	case errors.As(err, new(usageError)):
		printError(g.stderr, err) // a file it cannot read, said as run says it
	case err != nil:
		fmt.Fprintf(g.stderr, "%s\n", err) // FILE:LINE:COL: message, one a line
	case !g.Quiet:
		fmt.Fprintf(g.stdout, "%s: ok (%s workflow %q%s)\n", res.File, wf.Mode, wf.Name, described(wf.Description))
	}
}

// diagnostics are a file's error (one diagnostic per positioned problem)
// and warnings as validate --json prints them.
func diagnostics(file string, err error, warnings workflow.ParseErrors) []diagnosticJSON {
	var positioned workflow.ParseErrors
	var one *workflow.ParseError
	switch {
	case err == nil:
	case errors.As(err, &positioned):
	case errors.As(err, &one):
		positioned = workflow.ParseErrors{one}
	default:
		positioned = workflow.ParseErrors{{File: file, Msg: err.Error()}}
	}
	var out []diagnosticJSON
	for _, e := range append(positioned, warnings...) {
		severity := "error"
		if e.Warning {
			severity = "warning"
		}
		out = append(out, diagnosticJSON{File: e.File, Line: e.Line, Column: e.Col, Severity: severity, Message: e.Msg})
	}
	return out
}

// described is a workflow's description as validate shows it after the
// name, or "".
func described(desc string) string {
	if desc == "" {
		return ""
	}
	return ": " + desc
}
