package workflow

import (
	"strings"
	"testing"
)

// A map template that runs without isolation by default but commits, adds
// or merges with git in its shell text gets one warning at the step that
// does (SPEC §12.8); a template with a claude: step or commit_required
// (isolation by default), a map that sets isolation itself, and git
// commands that change nothing are not warned about.
func TestWarnSharedCheckout(t *testing.T) {
	const head = "mode: mapreduce\nmap:\n  input: x\n"
	tests := []struct {
		name, src, want string
	}{
		{"commit", "  agent_template:\n    - shell: echo\n    - shell: git commit -qam ${item}\n", "6:7: warning: the agent template runs git commit, and its agents share one checkout"},
		{"add with -C", "  agent_template:\n    - shell: git -C sub add f\n", "5:7: warning: the agent template runs git add"},
		{"merge in a handler", "  agent_template:\n    - shell: make\n      on_failure: {shell: git merge main}\n", "5:7: warning: the agent template runs git merge"},
		{"in on_success", "  agent_template:\n    - shell: make\n      on_success: {shell: git --no-pager commit -m x}\n", "6:19: warning: the agent template runs git commit"},
		{"once", "  agent_template:\n    - shell: git add a\n    - shell: git commit -m a\n", "5:7: warning: the agent template runs git add"},
		{"claude", "  agent_template:\n    - claude: /fix\n    - shell: git commit -m a\n", ""},
		{"commit_required", "  agent_template:\n    - shell: git commit -m a\n      commit_required: true\n", ""},
		{"isolation none", "  isolation: none\n  agent_template:\n    - shell: git commit -m a\n", ""},
		{"isolation worktree", "  isolation: worktree\n  agent_template:\n    - shell: git commit -m a\n", ""},
		{"read only", "  agent_template:\n    - shell: git log --format=%s && git diff --stat && echo commit\n", ""},
		{"other words", "  agent_template:\n    - shell: legit add && digit commit\n", ""},
	}
	for _, tt := range tests {
		wf, err := Parse("m.yml", []byte(head+tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := ""
		if len(wf.Warnings) > 0 {
			got = wf.Warnings.Error()
		}
		if tt.want == "" && got != "" || tt.want != "" && (len(wf.Warnings) != 1 || !strings.Contains(got, tt.want)) {
			t.Errorf("%s: warnings %q; want %q", tt.name, got, tt.want)
		}
	}
}
