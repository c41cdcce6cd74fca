package proc

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// A run under a group hook tells it the id of the group it starts (the
// shell's pid, which $$ prints), while the group runs, and that it is done
// with the group once Run returns.
func TestGroupHookSeesTheGroup(t *testing.T) {
	var seen []int
	var done bool
	ctx := WithGroupHook(context.Background(), func(pgid int) func() {
		seen = append(seen, pgid)
		return func() { done = true }
	})
	res := Run(ctx, Spec{Command: "echo $$", CaptureStdout: true})
	if res.Kind != KindOK {
		t.Fatalf("run: %+v", res)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != pid || !done {
		t.Errorf("hook saw %v (done %v), the shell was %d", seen, done, pid)
	}
	if Run(context.Background(), Spec{Command: "true"}); len(seen) != 1 {
		t.Errorf("a run without the hook reached it: %v", seen)
	}
}

// A hook added under another tells both, the outer first, and each is
// done with the group.
func TestGroupHooksChain(t *testing.T) {
	var log []string
	hook := func(name string) GroupHook {
		return func(int) func() {
			log = append(log, name)
			return func() { log = append(log, name+" done") }
		}
	}
	ctx := WithGroupHook(WithGroupHook(context.Background(), hook("outer")), hook("inner"))
	Run(ctx, Spec{Command: "true"})
	if got := strings.Join(log, ", "); got != "outer, inner, inner done, outer done" {
		t.Errorf("hooks told: %s", got)
	}
}
