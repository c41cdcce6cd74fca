package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every remote.Transport (a type asserted as one, `var _
// remote.Transport = ...`, outside tests) is named, as package.Type, in
// the section of ARCHITECTURE.md that shows the remote Host, and there
// are the two it shows: the agents' pipes and NATS.
func TestArchRemoteTransports(t *testing.T) {
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "\n## The remote Host\n")
	section, _, _ = strings.Cut(section, "\n## ")
	fset := token.NewFileSet()
	var found []string
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || len(spec.Values) != 1 || !isRemoteTransport(spec.Type) {
				return true
			}
			name := f.Name.Name + "." + assertedType(spec.Values[0])
			found = append(found, name)
			if !strings.Contains(section, name) {
				t.Errorf("%s: %s is a remote.Transport that ARCHITECTURE.md's \"The remote Host\" does not name", fset.Position(spec.Pos()), name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Errorf("remote.Transports %v, want the two ARCHITECTURE.md shows", found)
	}
}

// isRemoteTransport reports whether e is the type remote.Transport.
func isRemoteTransport(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "remote" && sel.Sel.Name == "Transport"
}

// assertedType is the name of the type of an assertion's value: T{},
// (*T)(nil) or &T{}.
func assertedType(e ast.Expr) string {
	for {
		switch v := e.(type) {
		case *ast.CompositeLit:
			e = v.Type
		case *ast.CallExpr:
			e = v.Fun
		case *ast.ParenExpr:
			e = v.X
		case *ast.StarExpr:
			e = v.X
		case *ast.UnaryExpr:
			e = v.X
		case *ast.Ident:
			return v.Name
		default:
			return "?"
		}
	}
}
