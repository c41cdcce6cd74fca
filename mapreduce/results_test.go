package mapreduce

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
)

// A result written after a torn one (a full disk, then resume) is kept:
// it does not continue the torn line, which would hide it from the results
// file.
func TestResultsAfterTornWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	for i := range 3 {
		l, err := openResults(path, state.LayoutOf(dir))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.add(Result{ItemIndex: i, ItemID: "item", Item: json.RawMessage(`"x"`)}); err != nil {
			t.Fatal(err)
		}
		l.close()
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(`{"item_index":9,"item_id":"item_9","item":"x","status":"succ`)
		f.Close()
	}
	out := filepath.Join(dir, "results.json")
	if err := writeResultsFile(path, out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	var results []Result
	if err := json.Unmarshal(data, &results); err != nil || len(results) != 3 {
		t.Fatalf("results file = %s (%v); want 3 results", data, err)
	}
}

// json_log_location is an absolute path, wherever the reduce reading it
// runs (the job's worktree), though the job's logs are named relative to
// the directory it runs in. It names the item's raw stream log when its
// agents streamed (Claude's JSON log, as Prodigy's does), else its output
// log.
func TestResultLogLocation(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	logs := state.LayoutOf("job")
	os.MkdirAll(logs.ItemLogs, 0o700)
	for _, path := range []string{logs.ItemLog("a"), logs.ItemLog("b"), logs.ItemStream("b")} {
		os.WriteFile(path, []byte("log\n"), 0o600)
	}
	l := &resultLog{logs: logs}
	for id, want := range map[string]string{
		"a":     filepath.Join(dir, "job", "logs", "items", "a.log"),
		"b":     filepath.Join(dir, "job", "logs", "items", "b.jsonl"),
		"quiet": "", // it printed nothing
	} {
		if got := l.entry(&Item{ID: id}, itemtask.Outcome{}, nil).JSONLogLocation; got != want {
			t.Errorf("json_log_location of %s: %q, want %q", id, got, want)
		}
	}
}

// Each entry has Prodigy's AgentResult shape (agent/types.rs): a status
// of "Success", {"Failed": MSG} or "Timeout", a duration of {secs, nanos},
// commits always, and the worktree's fields when the item had one.
func TestResultShape(t *testing.T) {
	dir := t.TempDir()
	l := &resultLog{logs: state.LayoutOf(dir)}
	os.MkdirAll(l.logs.ItemLogs, 0o700)
	os.WriteFile(l.logs.ItemLog("a"), []byte("log\n"), 0o600)
	it := &Item{ID: "a", Index: 1, Raw: json.RawMessage(`{"f":1}`)}
	tree := itemtask.Outcome{Output: "out", Duration: 1500 * time.Millisecond, Branch: "runner-items/j/a", Worktree: "/w/a", Commits: []string{"c1"}, FilesModified: []string{"x.go"}}
	tests := []struct {
		name   string
		out    itemtask.Outcome
		failed *itemtask.Failure
		want   string
	}{
		{"success", itemtask.Outcome{Output: "hi"}, nil,
			`{"item_id":"a","status":"Success","output":"hi","commits":[],"duration":{"secs":0,"nanos":0},"json_log_location":"` + dir + `/logs/items/a.log","item_index":1,"item":{"f":1},"duration_ms":0}`},
		{"failure in a worktree", tree, &itemtask.Failure{Kind: "exit", Message: "exit status 1"},
			`{"item_id":"a","status":{"Failed":"exit status 1"},"output":"out","commits":["c1"],"files_modified":["x.go"],"duration":{"secs":1,"nanos":500000000},"error":"exit status 1","worktree_path":"/w/a","branch_name":"runner-items/j/a","worktree_session_id":"a","json_log_location":"` + dir + `/logs/items/a.log","item_index":1,"item":{"f":1},"duration_ms":1500,"kind":"exit"}`},
		{"timeout", itemtask.Outcome{}, &itemtask.Failure{Kind: "timeout", Message: "timed out after 1s"},
			`{"item_id":"a","status":"Timeout","output":"","commits":[],"duration":{"secs":0,"nanos":0},"error":"timed out after 1s","json_log_location":"` + dir + `/logs/items/a.log","item_index":1,"item":{"f":1},"duration_ms":0,"kind":"timeout"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(l.entry(it, tc.out, tc.failed))
			if err != nil || string(data) != tc.want {
				t.Fatalf("got  %s (%v)\nwant %s", data, err, tc.want)
			}
			var back Result
			if err := json.Unmarshal(data, &back); err != nil || back.Status != l.entry(it, tc.out, tc.failed).Status {
				t.Errorf("read back: %+v, %v", back.Status, err)
			}
		})
	}
}

// results.json holds each item's last result once, in item order,
// whatever order results.jsonl has them in (items end in any order; an
// item's result is written again when a resume settles it).
func TestResultsFileInItemOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	l, err := openResults(path, state.LayoutOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Result{{ItemIndex: 3, Output: "3"}, {ItemIndex: 0, Output: "0"}, {ItemIndex: 2, Output: "2 first"}, {ItemIndex: 1, Output: "1"}, {ItemIndex: 2, Output: "2 last"}, {ItemIndex: 5, Output: "5"}} {
		r.ItemID, r.Item = "item", json.RawMessage(`"x"`)
		if err := l.add(r); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	out := filepath.Join(dir, "results.json")
	if err := writeResultsFile(path, out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	var results []Result
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatalf("results file = %s: %v", data, err)
	}
	var got []string
	for _, r := range results {
		got = append(got, r.Output)
	}
	if want := []string{"0", "1", "2 last", "3", "5"}; !slices.Equal(got, want) {
		t.Errorf("results file has %q, want %q", got, want)
	}
}

// results.json is written after the map only when a step reads it,
// through ${map.results} or ${map.results_file}, in any of its fields.
func TestResultsFileOnlyWhenRead(t *testing.T) {
	for _, tc := range []struct {
		name, reduce string
		want         bool
	}{
		{"counts only", "  - shell: echo ${map.successful}\n", false},
		{"no reduce", "", false},
		{"results_file", "  - shell: cat ${map.results_file}\n", true},
		{"results in a filter", "  - shell: echo ${map.results|json}\n", true},
		{"results_file in env", "  - shell: cat \"$F\"\n    env: {F: '${map.results_file}'}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := ""
			if tc.reduce != "" {
				policy = "reduce:\n" + tc.reduce
			}
			j := startJob(t, 3, 2, policy)
			agent := agentFunc(func(context.Context, *Item, int, retryv2.Slot) itemtask.Outcome { return itemtask.Outcome{} })
			if _, err := Run(t.Context(), j, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()}); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(j.Layout().ResultsJSON)
			if written := err == nil; written != tc.want {
				t.Errorf("results.json written: %v, want %v", written, tc.want)
			}
		})
	}
}
