package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gitOwner is the one package that runs the git commands that make,
// change or carry worktrees, branches and refs (ARCHITECTURE.md, "The
// workspace"); gitLayer, beneath it, runs every git command.
const (
	gitOwner = "internal/workspace"
	gitLayer = "internal/gitwork"
)

// gitReaders are the packages besides the owner that use gitLayer: the
// executor, for a step's commits (commit_required, auto_commit).
var gitReaders = []string{"internal/executor"}

// workspaceCommands are the git commands of worktrees, branches and refs
// and of the bundles and clones that carry them.
var workspaceCommands = []string{"worktree", "branch", "update-ref", "for-each-ref", "bundle", "fetch", "clone", "init", "merge"}

// No package but the workspace owner runs a git worktree or branch
// command: none calls a method of gitwork that runs one (found in
// gitwork's source: a method whose arguments to git name one, or that
// calls such a method), nor runs one itself (a literal command given to a
// Run, Output or exec.Command); and only gitReaders use gitwork at all
// (cmd asks the workspace). Tests are not looked at.
func TestArchGitWorkspaceOwner(t *testing.T) {
	owned := workspaceMethods(t)
	if len(owned) < 10 {
		t.Fatalf("gitwork's worktree and branch methods: %v; the scan finds too few", slices.Sorted(maps.Keys(owned)))
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if dir := filepath.Dir(path); dir == gitOwner || dir == gitLayer || strings.HasPrefix(path, "testdata") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		usesGitwork := slices.ContainsFunc(f.Imports, func(i *ast.ImportSpec) bool { return strings.HasSuffix(i.Path.Value, "/"+gitLayer+`"`) })
		if usesGitwork && !slices.Contains(gitReaders, filepath.Dir(path)) {
			t.Errorf("%s: imports %s: git is the workspace owner's (%s), or one of %v", path, gitLayer, gitOwner, gitReaders)
		}
		packages := map[string]bool{} // the names of the other packages the file imports
		for _, i := range f.Imports {
			if p, _ := strconv.Unquote(i.Path.Value); !strings.HasSuffix(p, "/"+gitLayer) {
				packages[filepath.Base(p)] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			otherPackage := ok && packages[x.Name] // a function of another package: its own
			switch name := sel.Sel.Name; {
			case usesGitwork && owned[name] && !otherPackage:
				t.Errorf("%s: calls gitwork's %s, a git worktree or branch command: the workspace owner's (%s)", fset.Position(call.Pos()), name, gitOwner)
			case name == "Run" || name == "Output" || name == "Command" || name == "CommandContext":
				if cmd := gitCommand(call.Args); cmd != "" {
					t.Errorf("%s: runs git %s: the workspace owner's (%s)", fset.Position(call.Pos()), cmd, gitOwner)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gitCommand is the workspace command among a call's first string
// literal arguments (after "git", for exec.Command), or "".
func gitCommand(args []ast.Expr) string {
	for _, a := range args {
		lit, ok := a.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		s, _ := strconv.Unquote(lit.Value)
		if s == "git" {
			continue
		}
		if slices.Contains(workspaceCommands, s) {
			return s
		}
		return ""
	}
	return ""
}

// workspaceMethods are gitwork's methods that run a workspace command:
// those that give one to git, and those that call one of them.
func workspaceMethods(t *testing.T) map[string]bool {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, gitLayer, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{}
	owned := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || fn.Body == nil {
					continue
				}
				name := fn.Name.Name
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.BasicLit:
						if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && slices.Contains(workspaceCommands, s) {
							owned[name] = true
						}
					case *ast.SelectorExpr:
						calls[name] = append(calls[name], n.Sel.Name)
					}
					return true
				})
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for name, callees := range calls {
			if !owned[name] && slices.ContainsFunc(callees, func(c string) bool { return owned[c] }) {
				owned[name], changed = true, true
			}
		}
	}
	return owned
}
