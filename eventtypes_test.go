package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runnerdev/runner/eventlog"
)

// emitCall finds the event type of an emit or Emit call that names it with
// a string literal (the types built from parts are listed by hand).
var emitCall = regexp.MustCompile(`[eE]mit\((?:[A-Za-z]+(?:\{\})?, )?"([a-z_]+)",`)

// Every event type the code writes is in eventlog.Types, the vocabulary
// that `runner events --type` checks names against.
func TestEventTypesAreListed(t *testing.T) {
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range emitCall.FindAllStringSubmatch(string(src), -1) {
			found++
			if !slices.Contains(eventlog.Types, m[1]) {
				t.Errorf("%s emits %q, which is not in eventlog.Types", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found only %d emit calls: the pattern no longer matches the code", found)
	}
}
