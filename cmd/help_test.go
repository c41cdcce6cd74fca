package cmd

import (
	"io"
	"regexp"
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

// envName is an environment variable's name as help texts write it.
var envName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)

// Each command's --help names each environment variable once: where its
// flag is described.
func TestHelpNamesEachEnvironmentVariableOnce(t *testing.T) {
	root := newRootCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		seen := map[string]int{}
		for _, name := range envName.FindAllString(c.Long+"\n"+c.UsageString(), -1) {
			seen[name]++
		}
		for name, n := range seen {
			if n > 1 {
				t.Errorf("%q --help names %s %d times", c.CommandPath(), name, n)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// A worker's --queue is the pool it pulls from, not where a workflow's
// items go.
func TestWorkerQueueHelp(t *testing.T) {
	c := newWorkerCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard})
	if usage := c.Flags().Lookup("queue").Usage; !strings.Contains(usage, "pull tasks from") {
		t.Errorf("runner worker --queue: %q", usage)
	}
}
