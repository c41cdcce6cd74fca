package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every older Prodigy file of testdata/prodigy-history, which Prodigy
// accepted, validates, warnings allowed (as runner validate checks it,
// map.input included); --strict refuses each one that has a key runner
// does not know, because of that key (issue 39).
func TestProdigyHistoryFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "prodigy-history", "*.yml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("Prodigy's older files: %d (%v)", len(files), err)
	}
	strict := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		wf, err := Parse(f, src)
		if err != nil {
			t.Errorf("%s does not validate:\n%v", f, err)
			continue
		}
		if err := CheckInputFile(wf); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		ignored := slices.ContainsFunc(wf.Warnings, func(w *ParseError) bool { return strings.HasPrefix(w.Msg, "ignored: runner does not know") })
		if refused := slices.ContainsFunc(wf.Warnings.Strict(), func(e *ParseError) bool { return !e.Warning }); ignored && !refused {
			t.Errorf("%s: --strict does not refuse its unknown keys", f)
		}
		if ignored {
			strict++
		}
	}
	if strict < len(files)-1 {
		t.Errorf("only %d of %d files have keys runner does not know", strict, len(files))
	}
	t.Logf("%d of Prodigy's older files validate; --strict refuses %d for keys runner does not know", len(files), strict)
}
