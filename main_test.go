package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/runnertest"
)

// TestMain lets the test binary act as runner and as the helper programs
// the scripts use.
func TestMain(m *testing.M) {
	programs := runnertest.Programs()
	programs["runner"] = main
	testscript.Main(m, programs)
}

// TestScripts runs every end-to-end script under testdata/script (-short
// runs the core ones: the others' [short] lines say why they wait for a
// full run).
func TestScripts(t *testing.T) {
	t.Parallel()
	p := runnertest.ScriptParams()
	p.Dir = "testdata/script"
	// UPDATE=1 rewrites the golden files inside the scripts: the file a
	// `cmp stdout FILE` compares with gets what the command printed.
	p.UpdateScripts = os.Getenv("UPDATE") != ""
	testscript.Run(t, p)
}

// The hostile-input tests (interpolation_hostile, mapreduce_hostile,
// interp's TestShellDelivery) run in temporary directories and assert
// their PWNED* marker files are absent; none may ever land in the checkout.
func TestNoHostileMarkersInCheckout(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case strings.HasPrefix(d.Name(), "PWNED"):
			t.Errorf("%s: a hostile value ran a command in the checkout", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
