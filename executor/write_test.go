package executor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow"
)

// A write_file step writes in the run's directory, expands values without
// escaping, leaves an existing file with the mode asked for whatever the
// umask, and fails without writing when the content is not its format.
func TestWriteFileStep(t *testing.T) {
	wf, err := workflow.Parse("w.yml", []byte(`
- write_file:
    path: sub/${item.name}.txt
    content: "${item.text}"
    mode: "0640"
    create_dirs: true
- write_file:
    path: bad.json
    content: "${item.text}"
    format: json
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "sub", "a b.txt")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("old and longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	x := &Executor{Env: os.Environ(), TmpDir: t.TempDir(), Stdout: &out}
	sc := NewScope(map[string]any{"item": map[string]any{"name": "a b", "text": `it's "$x" $(id)`}}, nil)
	r := Run{Scope: sc, Dir: dir}
	if res := x.RunStep(t.Context(), wf.Steps[0], r); res.Status != StepSucceeded {
		t.Fatalf("write: %v", res.Err)
	}
	data, err := os.ReadFile(target)
	if err != nil || string(data) != `it's "$x" $(id)` {
		t.Errorf("file = %q, %v", data, err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, %v; want 0640", fi.Mode(), err)
	}
	if got := out.String(); got != "wrote 15 bytes to sub/a b.txt (text)\n" {
		t.Errorf("output = %q", got)
	}
	res := x.RunStep(t.Context(), wf.Steps[1], r)
	if res.Status != StepFailed || !strings.Contains(res.Err.Error(), `step "step-2" failed: write_file: content is not valid JSON`) {
		t.Errorf("invalid json: %s %v", res.Status, res.Err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !os.IsNotExist(err) {
		t.Errorf("bad.json written: %v", err)
	}
}
