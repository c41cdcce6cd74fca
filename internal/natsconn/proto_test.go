package natsconn

import (
	"encoding/json"
	"testing"
)

// A batch's body, joined from its tasks' bodies, is the Batch of those
// tasks in JSON, byte for byte.
func TestBatchBodyIsTheBatchInJSON(t *testing.T) {
	for _, tasks := range [][]Task{nil, {{JobID: "j", Index: 1}}, {{JobID: "j", Index: 1}, {JobID: "j", Index: 2, Tip: "<&>"}}} {
		var bodies [][]byte
		for _, task := range tasks {
			b, _ := json.Marshal(task)
			bodies = append(bodies, b)
		}
		want, _ := json.Marshal(Batch{Tasks: append([]Task{}, tasks...)})
		if got := BatchBody(bodies); string(got) != string(want) {
			t.Errorf("BatchBody = %s, want %s", got, want)
		}
	}
}
