package workflow

import (
	"regexp"
	"sync"

	"gopkg.in/yaml.v3"
)

// gitWrites finds a git command that changes the repository's index,
// history or merge state in a shell text: git add, git commit, git merge
// (after git's own options, such as -C DIR or -c KEY=VALUE).
var gitWrites = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\bgit(?:\s+-[Cc]\s+\S+|\s+--?[\w-]+(?:=\S+)?)*\s+(add|commit|merge)\b`)
})

// warnSharedCheckout warns about a map template that runs without
// isolation by default (no claude: step, no commit_required) although its
// shell commands run git add, git commit or git merge: its items run at
// once in one checkout, where their index, commits and merges collide.
// Prodigy gives every agent a worktree; runner keeps plain shell maps in
// the checkout, where their uncommitted outputs stay (SPEC §12.8). A map
// that sets isolation itself is not warned about.
func (d *decoder) warnSharedCheckout(template []*Step) {
	if defaultIsolation(template) == IsolationWorktree {
		return
	}
	for s := range AllSteps(template) {
		if verb := gitWrite(s); verb != "" {
			d.warnf(&yaml.Node{Line: s.Pos.Line, Column: s.Pos.Col},
				"the agent template runs git %s, and its agents share one checkout (map.isolation is none without a claude: step or commit_required): set map.isolation: worktree to give each item a worktree and branch of its own, or map.isolation: none to keep the shared checkout", verb)
			return
		}
	}
}

// gitWrite returns the git subcommand (add, commit, merge) that the
// shell text of s or of its on_failure handlers runs, or "".
func gitWrite(s *Step) string {
	cmds := append([]Command{s.Command}, s.OnFailure.Commands...)
	for _, c := range cmds {
		if c.Kind != ShellCommand || c.Text == nil {
			continue
		}
		if m := gitWrites().FindStringSubmatch(c.Text.String()); m != nil {
			return m[1]
		}
	}
	return ""
}
