package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// GitIdentity is the author and committer of the test repositories'
// commits, as environment entries, with git's global and system
// configuration set aside.
var GitIdentity = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
	"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// Repo is a git repository made for a test (GitRepo).
type Repo struct {
	t   testing.TB
	Dir string
}

// GitRepo makes a git repository in a new temporary directory on branch
// main with one commit, "base", of files (name → content; none: an empty
// commit), made with GitIdentity, which only the fixture's own git
// commands have. A machine without git skips the test.
func GitRepo(t testing.TB, files map[string]string) Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := Repo{t: t, Dir: t.TempDir()}
	r.Git("init", "-q", "-b", "main")
	names := make([]string, 0, len(files))
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if len(names) > 0 {
		slices.Sort(names)
		r.Git(append([]string{"add", "--"}, names...)...)
	}
	r.Git("commit", "-q", "--allow-empty", "-m", "base")
	return r
}

// GitCheckout is GitRepo made the test's directory (t.Chdir), with
// GitIdentity in the test's environment (t.Setenv: not for parallel
// tests), for the git commands of the processes the test starts.
func GitCheckout(t testing.TB, files map[string]string) Repo {
	t.Helper()
	r := GitRepo(t, files)
	for _, kv := range GitIdentity {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(r.Dir)
	return r
}

// Git runs git with args in the repository and returns its output, its
// surrounding space trimmed; a failure fails the test.
func (r Repo) Git(args ...string) string {
	r.t.Helper()
	return r.In(r.Dir, args...)
}

// In runs git with args in dir (a worktree, another repository), as Git.
func (r Repo) In(dir string, args ...string) string {
	r.t.Helper()
	c := exec.Command("git", args...)
	c.Dir, c.Env = dir, append(os.Environ(), GitIdentity...)
	out, err := c.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
