package mapreduce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A result written after a torn one (a full disk, then resume) is kept:
// it does not continue the torn line, which would hide it from the results
// file.
func TestResultsAfterTornWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	for i := range 3 {
		l, err := openResults(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.add(Result{ItemIndex: i, ItemID: "item", Item: json.RawMessage(`"x"`), Status: "succeeded"}); err != nil {
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
