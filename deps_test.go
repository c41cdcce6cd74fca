package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowedImports is the layering: cmd -> mapreduce -> job (the job
// runtime) -> executor (steps) -> workflow (the file format) ->
// {retryv2, errorpolicy, leaves}. retryv2 and errorpolicy import only
// breaker, the circuit breaker both build on; eventlog and state import only
// appendfile, the lowest leaf; dlq, breaker and the other leaves import
// nothing of ours; mapreduce reaches the DLQ through an interface of its
// own, and only cmd wires the two together. report pictures a job from its
// meta, events and DLQ items alone, so it needs neither the job runtime nor
// mapreduce.
var allowedImports = map[string][]string{
	"":                {"cmd"},
	"cmd":             {"*"},
	"agentproc":       {"mapreduce", "job", "retryv2"},
	"mapreduce":       {"job", "executor", "workflow", "workflow/interp", "appendfile", "retryv2", "errorpolicy"},
	"job":             {"executor", "workflow", "workflow/interp", "eventlog", "state"},
	"executor":        {"workflow", "workflow/interp", "proc", "state", "retryv2", "breaker"},
	"workflow":        {"workflow/interp", "retryv2", "errorpolicy", "breaker"},
	"dlq":             nil,
	"report":          {"dlq", "eventlog", "state"},
	"breaker":         nil,
	"retryv2":         {"breaker"},
	"errorpolicy":     {"breaker"},
	"appendfile":      nil,
	"eventlog":        {"appendfile"},
	"workflow/interp": nil,
	"proc":            nil,
	"state":           {"appendfile"},
}

func TestPackageLayering(t *testing.T) {
	const module = "github.com/runnerdev/runner"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		allowed, known := allowedImports[pkg]
		if !known {
			t.Errorf("package %q is not in the layering table of deps_test.go", pkg)
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
}
