package job

import (
	"errors"
	"testing"

	"github.com/runnerdev/runner/internal/state"
)

// A completed job's exit code follows its DLQ as the caller's mapping of
// its outcome says; a job that failed otherwise, or a caller without a
// mapping, keeps the code it finished with.
func TestSetItemCountsOutcome(t *testing.T) {
	exit := func(err error) int {
		if errors.As(err, new(ItemsInDLQ)) {
			return 30
		}
		if err != nil {
			return 10
		}
		return 0
	}
	for _, tc := range []struct {
		name     string
		code     int
		dlq      int
		exit     func(error) int
		wantCode int
		wantErr  string
	}{
		{"emptied", 30, 0, exit, 0, ""},
		{"items remain", 30, 2, exit, 30, "2 item(s) in the dead-letter queue: runner dlq list j"},
		{"items again", 0, 1, exit, 30, "1 item(s) in the dead-letter queue: runner dlq list j"},
		{"failed otherwise", 10, 0, exit, 10, "was"},
		{"no mapping", 30, 0, nil, 30, "was"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &state.Meta{ID: "j", Status: state.Completed, ExitCode: tc.code, Error: "was", Items: &state.ItemCounts{}}
			SetItemCounts(m, state.ItemCounts{Total: 3, DLQ: tc.dlq}, tc.exit)
			if m.Items.DLQ != tc.dlq || m.ExitCode != tc.wantCode || m.Error != tc.wantErr {
				t.Errorf("counts %+v, exit code %d, error %q; want %d in the DLQ, %d, %q", *m.Items, m.ExitCode, m.Error, tc.dlq, tc.wantCode, tc.wantErr)
			}
		})
	}
}

// Counts written anew drop the stamp that said which files the earlier
// ones were settled with.
func TestSetItemCountsDropsTheStamp(t *testing.T) {
	m := &state.Meta{ID: "j", Status: state.Running, Items: &state.ItemCounts{}, ItemsSettled: &state.ItemsSettled{DLQGeneration: 3, ItemLogSize: 10}}
	SetItemCounts(m, state.ItemCounts{Total: 3, DLQ: 1}, nil)
	if m.ItemsSettled != nil {
		t.Errorf("stamp %+v kept with new counts", *m.ItemsSettled)
	}
}
