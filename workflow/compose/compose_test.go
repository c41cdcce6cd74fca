package compose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// load parses a file of the test's directory.
func load(path string) (*Source, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	return &Source{File: path, Src: src, Root: doc.Content[0], Nodes: count(&doc)}, nil
}

// count is the number of nodes in n (the tests' files have no aliases).
func count(n *yaml.Node) int {
	total := 1
	for _, c := range n.Content {
		total += count(c)
	}
	return total
}

// testMaxNodes is the tests' bound on a composition's values.
const testMaxNodes = 10_000

// inDir writes files into a new directory and makes it the current one
// (composition reads paths from it, as Prodigy's).
func inDir(t *testing.T, files map[string]string) {
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
}

func compose(t *testing.T, main string, params map[string]any) *Result {
	t.Helper()
	src, err := load(main)
	if err != nil {
		t.Fatal(err)
	}
	return Compose(src, Options{Load: load, Params: params, MaxNodes: testMaxNodes})
}

// A parameter's ${NAME} is replaced in claude, shell and id; another
// ${X} (a variable of the run) is left; imported commands follow the
// file's; a file that imports itself through another is a cycle.
func TestCompose(t *testing.T) {
	inDir(t, map[string]string{
		"main.yml":   "imports: [{path: lib.yml}]\nparameters: {required: [{name: f, type: string, description: d}]}\ncommands:\n  - shell: echo ${f} ${shell.output}\n    id: s-${f}\n",
		"lib.yml":    "commands:\n  - claude: /fix ${f}\n",
		"cycle.yml":  "imports: [{path: cycle2.yml}]\ncommands: []\n",
		"cycle2.yml": "imports: [{path: cycle.yml}]\ncommands: []\n",
	})
	res := compose(t, "main.yml", map[string]any{"f": "a.go"})
	if res.Root == nil {
		t.Fatalf("problems: %+v", res.Problems)
	}
	out, _ := yaml.Marshal(res.Root)
	for _, want := range []string{"echo a.go ${shell.output}", "id: s-a.go", "claude: /fix a.go"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("composed:\n%s\nlacks %q", out, want)
		}
	}
	if strings.Index(string(out), "echo a.go") > strings.Index(string(out), "/fix a.go") {
		t.Errorf("the imported command comes before the file's own:\n%s", out)
	}
	if res := compose(t, "main.yml", nil); res.Root != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Msg, "required parameter f is not given") {
		t.Errorf("without f: %+v", res.Problems)
	}
	res = compose(t, "cycle.yml", nil)
	if res.Root != nil || len(res.Problems) != 1 || res.Problems[0].File != "cycle2.yml" || !strings.Contains(res.Problems[0].Msg, "a cycle (cycle.yml → cycle2.yml → cycle.yml)") {
		t.Errorf("cycle: %+v", res.Problems)
	}
}

// Files that include each other many times over (each imports the next
// twice: 2^30 copies of the last) stop at the bound on the values
// composed, each file counted every time it is included.
func TestComposeBoundsRepeatedIncludes(t *testing.T) {
	files := map[string]string{"f30.yml": "commands: [{shell: x}]\n"}
	for i := range 30 {
		files[fmt.Sprintf("f%d.yml", i)] = fmt.Sprintf("imports: [{path: f%d.yml}, {path: f%[1]d.yml}]\ncommands: []\n", i+1)
	}
	inDir(t, files)
	res := compose(t, "f0.yml", nil)
	if res.Root != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Msg, fmt.Sprintf("the composed workflow grows past %d values", testMaxNodes)) {
		t.Errorf("problems: %+v", res.Problems)
	}
}
