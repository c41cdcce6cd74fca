package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/workflow"
)

// prodigyNotYet are Prodigy's files that do not validate, each with a part
// of its first error: the three that are not valid YAML (the others all
// validate, some with warnings). A file that starts to validate must leave
// the list and get a script, so the list never claims less than is true.
var prodigyNotYet = map[string]string{
	"examples_capture-parallel-analysis.yml": `capture-parallel-analysis.yml:103:5: invalid YAML: could not find expected ':' (check the indentation of the line above)`,
	"examples_mapreduce-json-input.yml":      `mapreduce-json-input.yml:30:46: invalid YAML: mapping values are not allowed in this context (a value that contains ": " must be quoted`,
	"workflows_implement-with-tests.yml":     `implement-with-tests.yml:66:1: invalid YAML: did not find expected '-' indicator (a file that is a list of steps has no keys after it: put the steps under commands:)`,
}

// prodigyExamples is the directory of Prodigy's own workflow files:
// ../shared/prodigy-examples/real, beside the checkout as in CI, or the
// one RUNNER_PRODIGY_EXAMPLES names (for a checkout elsewhere).
func prodigyExamples(t *testing.T) string {
	dir := os.Getenv("RUNNER_PRODIGY_EXAMPLES")
	if dir == "" {
		dir = repoPath(t, "..", "shared", "prodigy-examples", "real")
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("Prodigy's files are not at %s (set RUNNER_PRODIGY_EXAMPLES to their directory)", dir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Each of Prodigy's files either validates and has a script under
// testdata/prodigy that runs it as its comments expect, with stand-ins on
// PATH for the programs it calls (testdata/prodigy/bin: claude, ...), or
// is in prodigyNotYet with the reason it does not validate.
func TestProdigyRealFiles(t *testing.T) {
	t.Parallel()
	dir := prodigyExamples(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflow files in %s (%v)", dir, err)
	}
	scripts := map[string]bool{}
	scriptDir := repoPath(t, "testdata", "prodigy")
	matches, _ := filepath.Glob(filepath.Join(scriptDir, "*.txtar"))
	for _, s := range matches {
		scripts[strings.TrimSuffix(filepath.Base(s), ".txtar")+".yml"] = true
	}
	valid := 0
	for _, f := range files {
		name := filepath.Base(f)
		_, err := workflow.Load(f)
		reason, listed := prodigyNotYet[name]
		switch {
		case err == nil && listed:
			t.Errorf("%s validates now: take it out of prodigyNotYet and run it in a script testdata/prodigy/%s.txtar", name, strings.TrimSuffix(name, ".yml"))
		case err == nil && !scripts[name]:
			t.Errorf("%s validates but no script testdata/prodigy/%s.txtar runs it", name, strings.TrimSuffix(name, ".yml"))
		case err != nil && scripts[name]:
			t.Errorf("%s has a script, but does not validate: %v", name, err)
		case err != nil && !listed:
			t.Errorf("%s does not validate and is not in prodigyNotYet: %v", name, err)
		case err != nil && !strings.Contains(err.Error(), reason):
			t.Errorf("%s no longer fails with %q: %v", name, reason, err)
		}
		if err == nil {
			valid++
		}
		delete(scripts, name)
	}
	for name := range scripts {
		t.Errorf("testdata/prodigy has a script for %s, which is not in %s", name, dir)
	}
	t.Logf("%d of Prodigy's %d files validate, and each of them runs in a script", valid, len(files))
	switch {
	case testing.Short():
		t.Skip("the files' scripts sleep as the files do and make many git worktrees")
	case runnertest.Race:
		// Prodigy's files through stand-ins exercise the format, not new
		// concurrency: under -race they cost CI minutes its race run of
		// testdata/script already spends on the same code. make test runs
		// them in a step of their own, without -race (make prodigy).
		t.Skip("the files' scripts run without -race: make prodigy")
	}

	p := withSetup(runnertest.ScriptParams(), func(env *testscript.Env) error { return prodigySetup(env, dir, scriptDir) })
	p.Dir = scriptDir
	testscript.Run(t, p)
}

// prodigySetup gives a script of testdata/prodigy (the directory
// scripts) Prodigy's files (in dir) in $WORK/real, the stand-ins of
// testdata/prodigy/bin first on PATH, and a git repository with one
// commit in $WORK/repo, as Prodigy's files run in one.
func prodigySetup(env *testscript.Env, dir, scripts string) error {
	if err := os.CopyFS(filepath.Join(env.WorkDir, "real"), os.DirFS(dir)); err != nil {
		return err
	}
	if err := os.CopyFS(filepath.Join(env.WorkDir, "bin"), os.DirFS(filepath.Join(scripts, "bin"))); err != nil {
		return err
	}
	env.Setenv("PATH", filepath.Join(env.WorkDir, "bin")+string(filepath.ListSeparator)+env.Getenv("PATH"))
	for _, v := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		env.Setenv(v, "runner-test")
	}
	for _, v := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		env.Setenv(v, "test@example.com")
	}
	git := exec.Command("sh", "-c", "git init -q -b main repo && cd repo && echo '# a project' > README.md && git add -A && git commit -qm init")
	git.Dir = env.WorkDir
	git.Env = env.Vars
	if out, err := git.CombinedOutput(); err != nil {
		return errors.New("making the repository: " + err.Error() + ": " + string(out))
	}
	return nil
}
