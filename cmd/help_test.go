package cmd

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a user sees has examples in its --help, and the root's
// lists exit codes.
func TestHelpHasExamples(t *testing.T) {
	root := newRootCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard})
	if !strings.Contains(root.Long, "Exit codes:") {
		t.Error("runner --help does not list the exit codes")
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && !c.Hidden && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no examples in its --help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
