package cmd

import (
	"github.com/spf13/cobra"
)

func newCompletionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script for bash, zsh or fish. It completes commands,
flags and file names.`,
		Example: `  # bash (needs the bash-completion package)
  runner completion bash > /etc/bash_completion.d/runner
  # zsh
  runner completion zsh > "${fpath[1]}/_runner"
  # fish
  runner completion fish > ~/.config/fish/completions/runner.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(c *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(c, args); err != nil {
				return usageError{err}
			}
			if err := cobra.OnlyValidArgs(c, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(g.stdout, true)
			case "zsh":
				return root.GenZshCompletion(g.stdout)
			}
			return root.GenFishCompletion(g.stdout, true)
		},
	}
}
