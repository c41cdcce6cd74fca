package e2e

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/runnertest"
)

// TestMain builds runner for the tests, which run it as a process, and
// lets the test binary act as the helper programs the scripts use.
func TestMain(m *testing.M) {
	natstest.ServeIfChild() // a NATS server process that a test kills and restarts
	testscript.Main(runnertest.WithRunner(m), runnertest.Programs())
}

// repoPath is the path of elem in the repository.
func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := runnertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}
