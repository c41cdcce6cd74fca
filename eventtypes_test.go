package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// specEvents are the event types SPEC §8 requires, each with the fields
// it names for that type and one event built by the constructor runner
// writes it with.
var specEvents = []struct {
	event  eventlog.Event
	fields []string
}{
	{eventlog.JobStarted(7, "w", "w.yml", "standard", 1), []string{"seed"}},
	{eventlog.JobFinished("completed", 0, time.Second, nil, nil), nil},
	{eventlog.JobFinished("failed", 1, time.Second, errors.New("boom"), nil), nil},
	{eventlog.JobFinished("stopped", 1, time.Second, nil, nil), nil},
	{eventlog.JobFinished("interrupted", 130, time.Second, nil, nil), nil},
	{eventlog.JobResumed(1, 1), nil},
	{eventlog.StepStarted("build", 1, "make"), []string{"step"}},
	{eventlog.StepCompleted("build", 0, time.Second), []string{"step"}},
	{eventlog.StepFailed("build", "boom"), []string{"step"}},
	{eventlog.StepCommandFailed("build", "boom", 2, ""), []string{"step"}},
	{eventlog.StepSkipped("build", "when: false"), []string{"step"}},
	{eventlog.AttemptStarted("build", 1), []string{"step", "attempt"}},
	{eventlog.AttemptSucceeded("build", 1, time.Second), []string{"step", "attempt"}},
	{eventlog.AttemptFailed(eventlog.Failure{Step: "build", Attempt: 1, Kind: "exit", ExitCode: 2}), []string{"step", "attempt", "kind", "exit_code", "duration_ms"}},
	{eventlog.RetryDecision("build", eventlog.Decision{Attempt: 1, Action: "retry"}), []string{"step", "attempt", "policy", "matcher", "action", "delay_ms", "reason"}},
	{eventlog.ItemStarted("a", 0, 1, false), []string{"item_id"}},
	{eventlog.ItemSucceeded("a", 1, time.Second), []string{"item_id"}},
	{eventlog.ItemFailed("a", eventlog.Failure{}, "dlq", "a"), []string{"item_id"}},
	{eventlog.ItemSkipped("a", "on_item_failure: skip"), []string{"item_id"}},
	{eventlog.DLQAdded("a", 1), nil},
	{eventlog.DLQRemoved("a", ""), nil},
	{eventlog.CircuitChanged("open", "workflow", ""), nil},
	{eventlog.CircuitChanged("half_open", "step", "build"), nil},
	{eventlog.CircuitChanged("closed", "step", "build"), nil},
	{eventlog.ThresholdReached("max_failures", "3 items failed"), nil},
}

// specTypes is SPEC §8's list of event types, as the spec spells it.
var specTypes = []eventlog.Type{
	"job_started", "job_completed", "job_failed", "job_stopped", "job_interrupted", "job_resumed",
	"step_started", "step_completed", "step_failed", "step_skipped",
	"attempt_started", "attempt_succeeded", "attempt_failed", "retry_decision",
	"item_started", "item_succeeded", "item_failed", "item_skipped", "dlq_added", "dlq_removed",
	"circuit_opened", "circuit_half_open", "circuit_closed", "threshold_reached",
}

// specSection8Types reads the event types SPEC §8 lists (../shared/SPEC.md,
// beside the checkout as in CI), in order; nil when the spec is not there.
func specSection8Types(t *testing.T) []eventlog.Type {
	data, err := os.ReadFile(filepath.Join("..", "shared", "SPEC.md"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(data), "## 8. State, events, concurrency")
	_, list, ok := strings.Cut(sec, "At least these types")
	list, _, _ = strings.Cut(list, "Map-agent step")
	if !ok {
		t.Fatal("SPEC.md: no list of event types in §8")
	}
	var types []eventlog.Type
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		if strings.Contains(m[1], "_") && !slices.Contains([]string{"item_id", "exit_code", "duration_ms", "delay_ms"}, m[1]) {
			types = append(types, eventlog.Type(m[1]))
		}
	}
	return types
}

// Every type SPEC §8 names is an eventlog constant, in eventlog.Types, and
// written by a constructor with the fields the spec names for it; the list
// here is the spec's, read from SPEC.md when it is beside the checkout.
func TestEventTypesCoverSpec(t *testing.T) {
	if spec := specSection8Types(t); spec != nil && !slices.Equal(spec, specTypes) {
		t.Errorf("SPEC §8 lists %v; specTypes here is %v", spec, specTypes)
	}
	consts := eventTypeConstants(t)
	built := map[eventlog.Type]bool{}
	for _, s := range specEvents {
		typ := eventlog.Type(s.event.Type)
		built[typ] = true
		for _, f := range s.fields {
			if _, ok := s.event.Fields[f]; !ok {
				t.Errorf("%s has no field %s; SPEC §8 requires it", typ, f)
			}
		}
	}
	for _, typ := range specTypes {
		if !slices.Contains(consts, typ) {
			t.Errorf("SPEC §8 event type %s is not an eventlog constant", typ)
		}
		if !built[typ] {
			t.Errorf("SPEC §8 event type %s is built by no constructor listed here", typ)
		}
	}
	listed := map[eventlog.Type]int{}
	for _, typ := range eventlog.Types {
		listed[typ]++
		if !slices.Contains(consts, typ) {
			t.Errorf("eventlog.Types holds %q, which is not a constant", typ)
		}
	}
	for _, typ := range consts {
		if listed[typ] != 1 {
			t.Errorf("eventlog.Types holds %s %d times, want once", typ, listed[typ])
		}
	}
}

// eventTypeConstants returns the values of the constants of type Type
// that eventlog declares.
func eventTypeConstants(t *testing.T) []eventlog.Type {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("internal", "eventlog", "types.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []eventlog.Type
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Type" {
				continue
			}
			for _, value := range v.Values {
				s, err := strconv.Unquote(value.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				consts = append(consts, eventlog.Type(s))
			}
		}
	}
	if len(consts) < len(specTypes) {
		t.Fatalf("found %d Type constants in eventlog/types.go: the parse no longer matches the code", len(consts))
	}
	return consts
}

// Events are written only as the eventlog constructors build them: no
// code outside eventlog makes an Event of its own or a Type from a string
// literal, so that every type written is one of eventlog's constants.
func TestEventsComeFromConstructors(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			filepath.Dir(path) == "eventlog" {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if isEventlog(n.Type, "Event") {
					t.Errorf("%s makes an eventlog.Event itself; use a constructor", path)
				}
			case *ast.CallExpr:
				if _, lit := unparen(n.Args).(*ast.BasicLit); lit && isEventlog(n.Fun, "Type") {
					t.Errorf("%s makes an event type from a string literal; use its constant", path)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the walk no longer sees the code", checked)
	}
}

// isEventlog reports whether e is eventlog.name.
func isEventlog(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "eventlog"
}

// unparen returns the only argument of a call, or nil.
func unparen(args []ast.Expr) ast.Expr {
	if len(args) != 1 {
		return nil
	}
	return args[0]
}
