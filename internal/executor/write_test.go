package executor

import (
	"bytes"
	"io"
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
    path: sub/${vals.name}.txt
    content: "${vals.text}"
    mode: "0640"
    create_dirs: true
- write_file:
    path: bad.json
    content: "${vals.text}"
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
	sc := NewScope(map[string]any{"vals": map[string]any{"name": "a b", "text": `it's "$x" $(id)`}}, nil)
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
	if res.Status != StepFailed || !strings.Contains(res.Err.Error(), `step "step 2" failed: write_file: content is not valid JSON`) {
		t.Errorf("invalid json: %s %v", res.Status, res.Err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !os.IsNotExist(err) {
		t.Errorf("bad.json written: %v", err)
	}
}

// write_file never writes through a symlink: one at the path is replaced
// by the file (its target, a 0600 file elsewhere, keeps its content and
// mode), and a path whose directory resolves outside the step's tree (a
// symlinked directory, .., an absolute value) is refused unless the
// workflow author wrote it absolute. An agent of a worktree job could
// commit .prodigy/map-results.json -> ~/.bashrc for reduce to write.
func TestWriteFileSymlinks(t *testing.T) {
	outside := t.TempDir()
	bashrc := filepath.Join(outside, "bashrc")
	if err := os.WriteFile(bashrc, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, link, to string // link (in the step's directory) -> to, made first
		refused              bool
	}{
		{name: "symlink at the path", path: "map-results.json", link: "map-results.json", to: bashrc},
		{name: "symlink to a directory outside", path: ".prodigy/map-results.json", link: ".prodigy", to: outside, refused: true},
		{name: "dot-dot", path: "../escape.txt", refused: true},
		{name: "absolute value", path: "${vals.path}", refused: true},
		{name: "written absolute", path: filepath.Join(outside, "link", "ok.txt")},
		{name: "symlink to a directory inside", path: "in/x.txt", link: "in", to: "sub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "work")
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(outside, "link")); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if tt.link != "" {
				if err := os.Symlink(tt.to, filepath.Join(dir, tt.link)); err != nil {
					t.Fatal(err)
				}
			}
			wf, err := workflow.Parse("w.yml", []byte("- write_file: {path: '"+tt.path+"', content: new, mode: '0666'}\n"))
			if err != nil {
				t.Fatal(err)
			}
			x := &Executor{Env: os.Environ(), TmpDir: t.TempDir(), Stdout: io.Discard}
			sc := NewScope(map[string]any{"vals": map[string]any{"path": filepath.Join(outside, "abs.txt")}}, nil)
			res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: sc, Dir: dir})
			if data, err := os.ReadFile(bashrc); string(data) != "keep" || err != nil {
				t.Errorf("the symlink's target holds %q, %v", data, err)
			}
			if fi, err := os.Stat(bashrc); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the symlink's target has mode %v, %v; want 0600", fi.Mode(), err)
			}
			if tt.refused {
				if res.Status != StepFailed || !strings.Contains(res.Err.Error(), "the directory the step writes in") {
					t.Errorf("%s %v, want refused", res.Status, res.Err)
				}
				for _, name := range []string{"map-results.json", "escape.txt", "abs.txt"} {
					if _, err := os.Lstat(filepath.Join(outside, name)); err == nil {
						t.Errorf("%s written outside", name)
					}
				}
				return
			}
			if res.Status != StepSucceeded {
				t.Fatalf("write: %v", res.Err)
			}
			written := tt.path
			if !filepath.IsAbs(written) {
				written = filepath.Join(dir, written)
			}
			if fi, err := os.Lstat(written); tt.link == tt.path && (err != nil || !fi.Mode().IsRegular()) {
				t.Errorf("the symlink at the path is left: %v, %v", fi.Mode(), err)
			}
			if data, err := os.ReadFile(written); string(data) != "new" || err != nil {
				t.Errorf("%s holds %q, %v", written, data, err)
			}
		})
	}
}
