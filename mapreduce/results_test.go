package mapreduce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A result written after a torn one (a full disk, then resume) is kept:
// it does not continue the torn line, which would hide it from the results
// file.
func TestResultsAfterTornWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	for i := range 3 {
		l, err := openResults(path, func(id string) string { return filepath.Join(dir, id+".log") })
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

// Each entry has Prodigy's AgentResult shape (agent/types.rs): a status
// of "Success", {"Failed": MSG} or "Timeout", a duration of {secs, nanos},
// commits always, and the worktree's fields when the item had one.
func TestResultShape(t *testing.T) {
	dir := t.TempDir()
	l := &resultLog{logPath: func(id string) string { return filepath.Join(dir, id+".log") }}
	os.WriteFile(filepath.Join(dir, "a.log"), []byte("log\n"), 0o600)
	it := &Item{ID: "a", Index: 1, Raw: json.RawMessage(`{"f":1}`)}
	tree := Outcome{Output: "out", Duration: 1500 * time.Millisecond, Branch: "runner-items/j/a", Worktree: "/w/a", Commits: []string{"c1"}, FilesModified: []string{"x.go"}}
	tests := []struct {
		name   string
		out    Outcome
		failed *Failure
		want   string
	}{
		{"success", Outcome{Output: "hi"}, nil,
			`{"item_id":"a","status":"Success","output":"hi","commits":[],"duration":{"secs":0,"nanos":0},"json_log_location":"` + dir + `/a.log","item_index":1,"item":{"f":1},"duration_ms":0}`},
		{"failure in a worktree", tree, &Failure{Kind: "exit", Message: "exit status 1"},
			`{"item_id":"a","status":{"Failed":"exit status 1"},"output":"out","commits":["c1"],"files_modified":["x.go"],"duration":{"secs":1,"nanos":500000000},"error":"exit status 1","worktree_path":"/w/a","branch_name":"runner-items/j/a","worktree_session_id":"a","json_log_location":"` + dir + `/a.log","item_index":1,"item":{"f":1},"duration_ms":1500,"kind":"exit"}`},
		{"timeout", Outcome{}, &Failure{Kind: "timeout", Message: "timed out after 1s"},
			`{"item_id":"a","status":"Timeout","output":"","commits":[],"duration":{"secs":0,"nanos":0},"error":"timed out after 1s","json_log_location":"` + dir + `/a.log","item_index":1,"item":{"f":1},"duration_ms":0,"kind":"timeout"}`},
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
