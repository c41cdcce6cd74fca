package executor

import (
	"os"
	"path/filepath"
	"testing"
)

// A step's env is what $NAME in its shell text reads, as the command's
// environment holds it: over the workflow's value, for that step only.
func TestStepEnvInShellText(t *testing.T) {
	env := []string{"X=workflow"}
	src := `
- shell: 'echo "$X ${X} ${env.X} $(printenv X)" > out'
  env:
    X: step-${X}
`
	_, dir, _ := runValidated(t, src, env...)
	got, err := os.ReadFile(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "step-workflow step-workflow step-workflow step-workflow\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
