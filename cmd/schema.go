package cmd

import (
	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow"
)

func newSchemaCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the workflow format",
		Long: `Print the JSON Schema (draft 2020-12) of runner's workflow format, for
editors and linters. With the YAML language server, save it and put this
line at the top of a workflow file:

  # yaml-language-server: $schema=./runner.schema.json`,
		Example: "  runner schema > runner.schema.json",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			_, err := g.stdout.Write(workflow.Schema)
			return err
		},
	}
}
