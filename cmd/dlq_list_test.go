package cmd

import (
	"testing"

	"github.com/runnerdev/runner/dlq"
)

// The ERROR column keeps the command's own words: the step, its
// attempts and the exit status are the KIND and STEP columns'.
func TestOwnWords(t *testing.T) {
	for _, c := range []struct {
		f          dlq.Failure
		kind, text string
	}{
		{dlq.Failure{Kind: "exit", ExitCode: 3, Message: `step "check" failed: exit status 3: two is bad`}, "exit 3", "two is bad"},
		{dlq.Failure{Kind: "exit", ExitCode: 7, Message: `step "a \"b\"" failed after 2 attempts (attempts exhausted): exit status 7: exit status 7 again`}, "exit 7", "exit status 7 again"},
		{dlq.Failure{Kind: "exit", ExitCode: 1, Message: `step "check" failed after 1 attempt (not retryable): exit status 1`}, "exit 1", "(no output)"},
		{dlq.Failure{Kind: "timeout", ExitCode: 124, Message: `step "check" failed: timed out after 3s`}, "timeout", "timed out after 3s"},
		{dlq.Failure{Kind: "failed", Message: `step "check": when: unknown name x`}, "failed", "when: unknown name x"},
		{dlq.Failure{Kind: "merge_conflict", Message: "merging b into runner/j conflicts in a.txt"}, "merge_conflict", "merging b into runner/j conflicts in a.txt"},
	} {
		if got := failureKind(c.f); got != c.kind {
			t.Errorf("failureKind(%q) = %q, want %q", c.f.Message, got, c.kind)
		}
		if got := ownWords(c.f); got != c.text {
			t.Errorf("ownWords(%q) = %q, want %q", c.f.Message, got, c.text)
		}
	}
}
