package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/appendfile"
)

// StepRecord is a finished step in the progress journal, or a map agent's
// step in its item's checkpoints. Resume skips every step that has one and
// restores the variables it set; a map agent's step that was waiting to
// retry (status "retrying") continues its retry loop instead.
type StepRecord struct {
	Phase    string         `json:"phase,omitempty"` // "commands", "setup", "reduce", "merge"; "" in item checkpoints
	Index    int            `json:"index"`           // 0-based within the phase or template
	Key      string         `json:"step"`
	Status   string         `json:"status"` // succeeded, failed (handled), skipped, retrying
	ExitCode int            `json:"exit_code"`
	Vars     map[string]any `json:"vars,omitempty"`
	Output   string         `json:"output,omitempty"` // item checkpoints: the step's stdout tail

	// A step waiting to retry: its retry loop's progress.
	Attempts  int       `json:"attempts,omitempty"`   // attempts run
	Failures  []int     `json:"failures,omitempty"`   // per retry policy
	ElapsedMS int64     `json:"elapsed_ms,omitempty"` // of the retry budget at the next attempt
	Due       time.Time `json:"due,omitzero"`         // the next attempt starts no earlier
}

// Journal appends step records to a job's progress.jsonl (0600: it holds
// captured values that resume needs; workflow hides secrets in them).
type Journal struct {
	mu sync.Mutex
	f  *appendfile.File
}

// OpenJournal opens the job's journal for appending.
func (j *Job) OpenJournal() (*Journal, error) {
	f, err := appendfile.Open(j.Layout().Journal)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Append writes one record with a single write, so a crash leaves either
// the whole line or a partial last line that ReadJournal ignores.
func (jr *Journal) Append(rec StepRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	jr.mu.Lock()
	defer jr.mu.Unlock()
	if _, err := jr.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Close syncs and closes the journal.
func (jr *Journal) Close() error {
	serr := jr.f.Sync()
	if err := jr.f.Close(); err != nil {
		return err
	}
	return serr
}

// ReadJournal returns the finished steps, keyed by phase and index.
func (j *Job) ReadJournal() (map[string]map[int]StepRecord, error) {
	out := map[string]map[int]StepRecord{}
	err := readLines(j.Layout().Journal, func(line []byte) error {
		var rec StepRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&rec); err != nil {
			return err
		}
		if out[rec.Phase] == nil {
			out[rec.Phase] = map[int]StepRecord{}
		}
		out[rec.Phase][rec.Index] = rec
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return out, nil
}
