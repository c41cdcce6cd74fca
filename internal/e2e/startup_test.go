package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// runner's own packages initialise only what every subcommand needs when
// the process starts: regular expressions, templates and tables that some
// subcommands use are made on first use. GODEBUG=inittrace=1 has the Go
// runtime print what each package's initialisation allocated; `runner
// version` uses none of them.
func TestStartupInitialisesLittle(t *testing.T) {
	const most = 32 << 10 // bytes; the regular expressions and the report's template alone are over 300 KB
	run := exec.Command("runner", "version")
	run.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("runner version: %v\n%s", err, out)
	}
	total, packages := 0, []string{}
	for line := range strings.Lines(string(out)) {
		// init github.com/runnerdev/runner/workflow @6.1 ms, 0.42 ms clock, 132016 bytes, 1506 allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/runnerdev/runner") || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		total += n
		packages = append(packages, f[1]+" "+f[7])
	}
	if len(packages) == 0 {
		t.Fatalf("no inittrace line of runner's packages in:\n%s", out)
	}
	if total > most {
		t.Errorf("runner's packages allocate %d bytes when it starts, want at most %d:\n%s", total, most, strings.Join(packages, "\n"))
	}
}
