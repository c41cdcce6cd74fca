package cmd

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/runnerdev/runner/cmd.Version=v1.2.3".
var Version = ""

func newVersionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print runner's version and the commit it was built from",
		Example: "  runner version\n  runner --version",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(g.stdout, "runner", version())
			return nil
		},
	}
}

// version is runner's version, and the commit it was built from when the
// build recorded it: the version make build stamps (git describe), else
// the module's (go install ...@v1.2.3), else "dev".
func version() string {
	info, _ := debug.ReadBuildInfo()
	v := Version
	if v == "" && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if rev := buildRevision(info); rev != "" && !strings.Contains(v, rev[:7]) {
		v += " (commit " + rev + ")"
	}
	return v
}

// buildRevision is the commit the build recorded (go build in a git work
// tree records it), shortened, with "+changes" when the tree had some; ""
// when it recorded none.
func buildRevision(info *debug.BuildInfo) string {
	if info == nil {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(rev) < 7 {
		return ""
	}
	if modified == "true" {
		rev += "+changes"
	}
	return rev
}
