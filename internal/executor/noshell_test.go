package executor

import (
	"testing"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// WithoutShell tells the dry run which shell steps run their program
// directly: with no placeholder, or once plain values are filled in.
func TestWithoutShell(t *testing.T) {
	if !proc.Direct("make test") {
		t.Skip("/bin/sh is not dash: every command runs under it")
	}
	for _, tc := range []struct {
		kind workflow.CommandKind
		text string
		want string
	}{
		{workflow.ShellCommand, "make test", NoShellAlways},
		{workflow.ShellCommand, "gzip -k ${item.path} ${shell.output}", NoShellPlainValues},
		{workflow.ShellCommand, "cat ${item}", NoShellPlainValues},
		{workflow.ShellCommand, "echo hi", ""},             // a builtin
		{workflow.ShellCommand, "cat $HOME", ""},           // left to the shell
		{workflow.ShellCommand, "cat ${item} | wc -l", ""}, // a pipe
		{workflow.ShellCommand, `grep "${item}" x`, ""},    // double quotes
		{workflow.ClaudeCommand, "make test", ""},          // the agent program, never a shell
	} {
		tmpl, err := interp.Parse(tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := WithoutShell(workflow.Command{Kind: tc.kind, Text: tmpl}); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.kind, tc.text, got, tc.want)
		}
	}
}
