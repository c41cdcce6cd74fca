package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/runnerdev/runner/cmd.Version=v1.2.3".
var Version = ""

func newVersionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print runner's version",
		Example: "  runner version",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(g.stdout, "runner", version())
			return nil
		},
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
