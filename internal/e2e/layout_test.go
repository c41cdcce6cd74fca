package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
)

// TestJobDirLayout runs a job of each kind to its end and fails on any
// file or directory in its job directory that state.Layout does not name
// (testdata/layout/job_dirs.txtar); $NATS_URL is a JetStream server with a
// `runner worker` on it.
func TestJobDirLayout(t *testing.T) {
	t.Parallel()
	p := runnertest.ScriptParams()
	p.Files = []string{repoPath(t, "testdata", "layout", "job_dirs.txtar")}
	p.Cmds["jobdirlayout"] = jobDirLayout
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		srv, err := natstest.StartIn(filepath.Join(env.WorkDir, "nats-store"))
		if err != nil {
			return err
		}
		env.Defer(srv.Shutdown)
		env.Setenv("NATS_URL", srv.URL())
		return startScriptWorker(env, srv.URL(), "w1", env.WorkDir)
	}
	testscript.Run(t, p)
}

// jobdirlayout DIR lists the job directory DIR, each path with the
// state.Layout field that names it, and fails on a path that none names
// (! jobdirlayout: fails unless one is there).
func jobDirLayout(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: jobdirlayout DIR")
	}
	layout := state.LayoutOf(ts.MkAbs(args[0]))
	named, err := layoutNames(layout)
	if err != nil {
		ts.Fatalf("jobdirlayout: %v", err)
	}
	var unnamed int
	err = filepath.WalkDir(layout.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == layout.Dir {
			return err
		}
		rel, _ := filepath.Rel(layout.Dir, path)
		field, ok := named[path]
		if !ok {
			unnamed++
			fmt.Fprintf(ts.Stdout(), "%s: not named by state.Layout\n", rel)
			return nil
		}
		fmt.Fprintf(ts.Stdout(), "%s: %s\n", rel, field)
		if d.IsDir() && field != "Logs" && field != "ItemLogs" {
			return fs.SkipDir // what is in it is its owner's (git's, the steps')
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("jobdirlayout: %v", err)
	}
	switch {
	case unnamed > 0 && !neg:
		ts.Fatalf("%d path(s) in %s that state.Layout does not name", unnamed, args[0])
	case unnamed == 0 && neg:
		ts.Fatalf("every path in %s is named by state.Layout", args[0])
	}
}

// layoutNames maps each path that layout names to the name of its field:
// its string fields, the workflow copy its metadata names, and the output
// and stream logs of the job's items.
func layoutNames(layout state.Layout) (map[string]string, error) {
	named := map[string]string{}
	v := reflect.ValueOf(layout)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Dir" {
			named[v.Field(i).String()] = name
		}
	}
	data, err := os.ReadFile(layout.Meta)
	if err != nil {
		return nil, err
	}
	var meta state.Meta
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, err
	}
	named[layout.WorkflowCopy(meta.CopyName)] = "WorkflowCopy(Meta.CopyName)"
	if _, err := os.Stat(layout.Items); err != nil {
		return named, nil // not a MapReduce job, or one that loaded no items
	}
	err = items.Read(layout.Items, func(it *items.Item) (bool, error) {
		named[layout.ItemLog(it.ID)] = "ItemLog(" + it.ID + ")"
		named[layout.ItemStream(it.ID)] = "ItemStream(" + it.ID + ")"
		named[layout.LegacyItemLog(it.Index)] = fmt.Sprintf("LegacyItemLog(%d)", it.Index)
		return true, nil
	})
	return named, err
}
