package itemtask

import (
	"encoding/json"
	"testing"
	"time"
)

// A failure's JSON is the wire form NATS results carried before itemtask
// owned it, and a job's item log written by an older runner (Go field
// names, nanoseconds) still reads whole.
func TestFailureJSON(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	f := Failure{Attempt: 2, At: at, Kind: "exit", ExitCode: 3, Message: "boom", StderrTail: "err", Step: "work", Duration: 1500 * time.Millisecond}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attempt":2,"at":"2026-12-07T10:00:00Z","kind":"exit","exit_code":3,"message":"boom","stderr_tail":"err","step":"work","duration_ms":1500}`
	if string(data) != want {
		t.Errorf("wire form\n got %s\nwant %s", data, want)
	}
	var back Failure
	if err := json.Unmarshal(data, &back); err != nil || back != f {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, f)
	}
	old := `{"Attempt":2,"At":"2026-12-07T10:00:00Z","Kind":"exit","ExitCode":3,"Message":"boom","StderrTail":"err","Step":"work","Duration":1500000000}`
	var legacy Failure
	if err := json.Unmarshal([]byte(old), &legacy); err != nil || legacy != f {
		t.Errorf("older item log: %+v, %v; want %+v", legacy, err, f)
	}
}
