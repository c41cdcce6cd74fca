package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docsToCome are packages whose doc comment the work restructuring them
// writes (issue 26.4): each leaves this list in the commit that gives it one.
var docsToCome = map[string]bool{}

// TestPackageDocs checks that every package of the module has a doc
// comment, in one file only, starting "Package <name> " ("Command " for
// main), so that go doc teaches each package and a new one cannot come
// without.
func TestPackageDocs(t *testing.T) {
	const module = "github.com/runnerdev/runner"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		pkg, name, dir := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/"), fields[1], fields[2]
		listed[pkg] = true
		var docs []string // the files with a package doc comment
		var doc string
		for file := range strings.FieldsSeq(fields[3]) {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, file), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil {
				docs = append(docs, file)
				doc = f.Doc.Text()
			}
		}
		want := "Package " + name + " "
		if name == "main" {
			want = "Command "
		}
		switch {
		case docsToCome[pkg]:
			if len(docs) > 0 {
				t.Errorf("package %q has its doc comment now: take it out of docsToCome", fields[0])
			}
		case len(docs) == 0:
			t.Errorf("package %q has no doc comment: write one in its doc.go, starting %q", fields[0], want)
		case len(docs) > 1:
			t.Errorf("package %q has doc comments in %d files (%s): keep one, in doc.go", fields[0], len(docs), strings.Join(docs, ", "))
		case !strings.HasPrefix(doc, want):
			t.Errorf("package %q: its doc comment (%s) reads %q, which does not start %q", fields[0], docs[0], strings.SplitN(doc, "\n", 2)[0], want)
		}
	}
	for pkg := range docsToCome {
		if !listed[pkg] {
			t.Errorf("docsToCome names %q, which is not a package of the module now", pkg)
		}
	}
}
