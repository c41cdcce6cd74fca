package mapreduce

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
)

// A resumed map whose items run in worktrees reads the item log through
// its index, also to find the items a dead process merged
// (settleMerged): the lines the index covers are not read again. Here
// they are made unreadable, which failed the resume when settleMerged
// read the whole log.
func TestResumeInWorktreesReadsTheLogThroughItsIndex(t *testing.T) {
	gitRepo(t)
	dir := t.TempDir()
	j := startSource(t, dir, "mode: mapreduce\nmap:\n  input: seq 1 6\n  max_parallel: 1\n  isolation: worktree\n  agent_template: [{shell: 'true'}]\n")
	ctx, cancel := context.WithCancel(t.Context())
	var done atomic.Int64
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if done.Add(1) == 3 {
			cancel()
		}
		return itemtask.Outcome{}
	})
	backend := agent.backend()
	backend.Can.Worktrees = true
	Run(ctx, j, Options{DLQ: newFakeDLQ(), Dispatcher: backend})
	j.Close()
	logPath := j.Layout().ItemStates
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.Layout().ItemIndex); err != nil {
		t.Fatalf("no index after the first run: %v", err)
	}
	first := bytes.IndexByte(data, '\n')
	copy(data, bytes.Repeat([]byte("x"), first)) // the first record, which the index covers
	if err := os.WriteFile(logPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	resumed, err := job.Resume("t", job.Options{Store: state.Store{Dir: filepath.Join(dir, "state")}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	sum, err := Run(t.Context(), resumed, Options{DLQ: newFakeDLQ(), Dispatcher: backend})
	if err != nil || sum.Items.Succeeded != 6 {
		t.Fatalf("resumed run = %+v, %v", sum.Items, err)
	}
}
