package main

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowedImports reads the package map of ARCHITECTURE.md: for each
// package (by path in the module, "" for main), the packages of ours it
// may import ("*": any).
func allowedImports(t *testing.T) map[string][]string {
	allowed, _ := packageMap(t)
	return allowed
}

// packageMap reads the package map of ARCHITECTURE.md: the packages each
// package may import, and the packages in the table's order.
func packageMap(t *testing.T) (map[string][]string, []string) {
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(data), "## Package map")
	table, _, _ = strings.Cut(table, "\n## ")
	allowed := map[string][]string{}
	var order []string
	for line := range strings.Lines(table) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg, _, _ := strings.Cut(strings.Trim(strings.TrimSpace(cells[1]), "`"), "`")
		if pkg == "." {
			pkg = ""
		}
		var imports []string
		switch deps := strings.TrimSpace(cells[2]); deps {
		case "all":
			imports = []string{"*"}
		case "—":
		default:
			for d := range strings.SplitSeq(deps, ",") {
				imports = append(imports, strings.Trim(strings.TrimSpace(d), "`"))
			}
		}
		allowed[pkg] = imports
		order = append(order, pkg)
	}
	if len(allowed) < 10 {
		t.Fatalf("ARCHITECTURE.md: found %d packages in its package map; is the table still there?", len(allowed))
	}
	return allowed, order
}

// The package map reads top down: a package may import only packages
// listed below it, so that the table shows the direction of every
// dependency.
func TestPackageMapPointsDown(t *testing.T) {
	allowed, order := packageMap(t)
	for i, pkg := range order {
		for _, imp := range allowed[pkg] {
			if imp != "*" && !slices.Contains(order[i+1:], imp) {
				t.Errorf("ARCHITECTURE.md: %q may import %q, which is not listed below it", pkg, imp)
			}
		}
	}
}

// TestPackageLayering checks the imports of every package against the
// package map of ARCHITECTURE.md, and that every package the map lists
// exists.
func TestPackageLayering(t *testing.T) {
	allowedImports := allowedImports(t)
	const module = "github.com/runnerdev/runner"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := maps.Clone(allowedImports)
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		delete(listed, pkg)
		allowed, known := allowedImports[pkg]
		if !known {
			t.Errorf("package %q is not in the package map of ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			own, ok := strings.CutPrefix(imp, module+"/")
			if !ok || slices.Contains(allowed, "*") || slices.Contains(allowed, own) {
				continue
			}
			t.Errorf("%s imports %s, which the layering does not allow", fields[0], imp)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(listed)) {
		t.Errorf("ARCHITECTURE.md: the package map lists %q, which is not a package", pkg)
	}
}
