package runnertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// module is the module path of runner, as go.mod names it.
const module = "github.com/runnerdev/runner"

// Root returns the repository's directory: the nearest one above the
// working directory (a package's, under go test) whose go.mod is runner's.
// It is looked for once.
func Root() (string, error) { return root() }

var root = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module "+module+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s in %s or above it", module, dir)
		}
	}
})

// coverDir is the directory that runner binaries built for tests that
// measure coverage write theirs to (RUNNER_COVERDIR; make cover sets it):
// go test counts only its own binary's, so make cover adds this
// directory's to its profile.
func coverDir() string {
	if testing.CoverMode() == "" {
		return ""
	}
	return os.Getenv("RUNNER_COVERDIR")
}

// Build builds runner, the module's main package, to path with go build's
// flags, measuring coverage when the tests do and RUNNER_COVERDIR names
// where it goes (see WithRunner).
func Build(path string, flags ...string) error {
	dir, err := Root()
	if err != nil {
		return err
	}
	if coverDir() != "" {
		flags = append(flags, "-cover", "-covermode="+testing.CoverMode(), "-coverpkg="+module+"/...")
	}
	build := exec.Command("go", append(append([]string{"build", "-o", path}, flags...), ".")...)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", flags, err, out)
	}
	return nil
}

// WithRunner wraps m for testscript.Main: its Run first builds runner
// (with -race when the tests have it) into a directory it puts first on
// PATH, so that the tests and scripts run it as a process, `runner`; when
// the tests measure coverage into RUNNER_COVERDIR, the processes they
// start write theirs there.
func WithRunner(m testscript.TestingM) testscript.TestingM { return withRunner{m} }

type withRunner struct{ m testscript.TestingM }

func (w withRunner) Run() int {
	dir, err := os.MkdirTemp("", "runner-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var flags []string
	if Race {
		flags = append(flags, "-race")
	}
	if err := Build(filepath.Join(dir, "runner"), flags...); err != nil {
		fmt.Fprintf(os.Stderr, "building runner for the tests: %v\n", err)
		return 1
	}
	os.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	if cover := coverDir(); cover != "" {
		os.Setenv("GOCOVERDIR", cover)
	}
	return w.m.Run()
}

// RaceNoExitSleep is GORACE for the runner processes of tests, and their
// agents: a binary built with -race sleeps a second as it exits unless
// told not to (a second a command of each script, and runner waits for
// its agents to exit).
func RaceNoExitSleep() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}
