package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// errNoCommit is the failure of an attempt that succeeded without making
// the commit commit_required asks for; the step's error names the step.
var errNoCommit = errors.New("made no commit (commit_required)")

// commitTracker watches the git HEAD of a step with commit_required or
// auto_commit: HEAD before the step, the commits its attempts made, and
// runner's own commit of what they left.
type commitTracker struct {
	step *workflow.Step
	r    Run
	g    gitwork.Git // in the step's directory, with the step's environment
	base string      // HEAD before the step; "" in a repository without commits
	mask func(string) string
}

// trackCommits records HEAD before the step runs. The step's directory
// must be inside a git work tree.
func (x *Executor) trackCommits(ctx context.Context, step *workflow.Step, r Run) (*commitTracker, error) {
	env, dir, err := x.stepEnv(step, r, 1, nil)
	if err != nil {
		return nil, err
	}
	t := &commitTracker{step: step, r: r, g: gitwork.Git{Dir: dir, Env: env, Grace: x.Grace}, mask: x.mask}
	if res := t.g.Run(ctx, "rev-parse", "--is-inside-work-tree"); res.Kind != proc.KindOK || strings.TrimSpace(string(res.Stdout)) != "true" {
		field := "commit_required"
		switch {
		case step.CommitRequired:
		case step.AutoCommit:
			field = "auto_commit"
		default:
			field = "outputs"
		}
		abs, _ := filepath.Abs(cmp.Or(dir, "."))
		why := gitwork.Message(res)
		if res.Kind == proc.KindOK {
			why = "it is not in a work tree"
		}
		return nil, fmt.Errorf("%s needs a git work tree, and %s is not in one (%s)", field, abs, why)
	}
	if t.base, err = t.g.Head(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// check looks at the work tree after a successful attempt: the commits
// made since the step started, else runner's auto_commit, else, with
// commit_required, the attempt fails as no_commit.
func (t *commitTracker) check(ctx context.Context, ran commandResult) commandResult {
	commits, err := t.newCommits(ctx)
	if err == nil && len(commits) == 0 && t.step.AutoCommit {
		commits, err = t.autoCommit(ctx)
	}
	switch {
	case err != nil:
		ran.Kind, ran.Err = retryv2.KindNoCommit, err
	case len(commits) == 0 && t.step.CommitRequired:
		ran.Kind, ran.Err = retryv2.KindNoCommit, errNoCommit
	}
	ran.commits = commits
	return ran
}

// newCommits lists the commits from the step's start to HEAD, oldest first.
func (t *commitTracker) newCommits(ctx context.Context) ([]string, error) {
	head, err := t.g.Head(ctx)
	if err != nil || head == t.base {
		return []string{}, err
	}
	return t.g.Commits(ctx, t.base, head)
}

// autoCommit commits everything the step left in the work tree, if
// anything, and returns the new commit.
func (t *commitTracker) autoCommit(ctx context.Context) ([]string, error) {
	status, err := t.g.Output(ctx, "status", "--porcelain")
	if err != nil || status == "" {
		return []string{}, err
	}
	msg, err := t.message()
	if err != nil {
		return nil, err
	}
	if _, err := t.g.Output(ctx, "add", "-A"); err != nil {
		return nil, fmt.Errorf("auto_commit: %w", err)
	}
	if _, err := t.g.Output(ctx, "commit", "-q", "-m", msg); err != nil {
		return nil, fmt.Errorf("auto_commit: %w", err)
	}
	return t.newCommits(ctx)
}

// commitSubject is what runner's own commit message says of step: its
// label when it has a name or an id, else the first line of its command,
// which says more in git history than its place.
func commitSubject(step *workflow.Step) string {
	if step.Name != "" || step.ID != "" {
		return step.Label("")
	}
	return step.CommandLine()
}

// message is auto_commit's commit message: commit_message expanded as the
// step's command is (the step's own env over the workflow's variables),
// else runner's own; secrets masked, as everywhere runner writes, since
// git history outlives any log.
func (t *commitTracker) message() (string, error) {
	msg := "runner: " + commitSubject(t.step)
	if t.r.ItemID != "" {
		msg += " (" + t.r.ItemID + ")"
	}
	if t.step.CommitMessage != nil {
		sc, err := stepScope(t.step, t.r.Scope)
		if err != nil {
			return "", err
		}
		if msg, err = t.step.CommitMessage.Expand(sc.PlainLookup(), interp.Plain); err != nil {
			return "", fmt.Errorf("auto_commit: commit_message: %w", err)
		}
	}
	return t.mask(msg), nil
}
