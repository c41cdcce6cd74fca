package state

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
)

// itemJob is a job in a temporary store, for its item log.
func itemJob(t *testing.T) *Job {
	t.Helper()
	j, err := Store{Dir: t.TempDir()}.Create(Meta{ID: "m", Status: Running}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// appendRecords appends recs through an ItemLog, which writes its index
// when it closes.
func appendRecords(t *testing.T, j *Job, recs ...ItemRecord) {
	t.Helper()
	if err := j.AppendItemRecords(recs...); err != nil {
		t.Fatal(err)
	}
}

// appendRaw appends recs to the item log as a process killed before it
// wrote the index leaves them.
func appendRaw(t *testing.T, j *Job, recs ...ItemRecord) {
	t.Helper()
	f, err := os.OpenFile(j.Layout().ItemStates, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, rec := range recs {
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

// Resuming a job reads the item log's index and decodes only the lines
// after it: the same number of lines whether the job has finished 100
// items or 10,000 before it was killed (the lines a killed process
// appended after its last index, and the running items' records).
func TestItemStatesDecodeOnlyTheLogsTail(t *testing.T) {
	decoded := map[int]int{}
	for _, done := range []int{100, 10_000} {
		j := itemJob(t)
		recs := make([]ItemRecord, 0, done+2)
		for i := range done {
			recs = append(recs, ItemRecord{Index: i, ID: fmt.Sprint(i), State: ItemRunning, Attempt: 1}, ItemRecord{Index: i, ID: fmt.Sprint(i), State: ItemSucceeded, Attempt: 1})
		}
		recs = append(recs, ItemRecord{Index: done, ID: "r", State: ItemRunning, Attempt: 1},
			ItemRecord{Index: done, ID: "r", Attempt: 1, Step: &StepRecord{Index: 0, Status: "succeeded"}})
		appendRecords(t, j, recs...)
		appendRaw(t, j, ItemRecord{Index: done + 1, ID: "k", State: ItemRunning, Attempt: 1}, ItemRecord{Index: done + 1, ID: "k", State: ItemSucceeded, Attempt: 1})

		s, err := j.LoadItemStates()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Count(ItemSucceeded); got != done+1 {
			t.Errorf("%d done: %d succeeded, want %d", done, got, done+1)
		}
		if r := s.Running(); len(r) != 1 || len(r[done].Steps) != 1 {
			t.Errorf("%d done: running %+v, want item %d with its checkpoint", done, r, done)
		}
		decoded[done] = s.Decoded
	}
	if decoded[100] != decoded[10_000] || decoded[100] > 4 {
		t.Errorf("lines decoded on resume: %v, want the same few (4) for 100 and 10,000 finished items", decoded)
	}
}

// Whatever happened to the item log's index — written at any point of
// the log, damaged, older than the log, beyond it, or never written —
// the states read agree with a full read of the log (ReadItemStates).
func TestItemStatesAgreeWithTheLog(t *testing.T) {
	for seed := range uint64(10) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		j := itemJob(t)
		attempt := map[int]int{}
		for range 20 {
			var recs []ItemRecord
			for range rnd.IntN(20) {
				i := rnd.IntN(25)
				id := fmt.Sprint("item-", i)
				switch rnd.IntN(6) {
				case 0, 1:
					attempt[i]++
					recs = append(recs, ItemRecord{Index: i, ID: id, State: ItemRunning, Attempt: attempt[i]})
				case 2:
					recs = append(recs, ItemRecord{Index: i, ID: id, Attempt: attempt[i], Step: &StepRecord{Index: rnd.IntN(3), Status: "succeeded", Output: id}})
				default:
					recs = append(recs, ItemRecord{Index: i, ID: id, State: []string{ItemSucceeded, ItemDLQ, ItemSkipped}[rnd.IntN(3)], Attempt: attempt[i]})
				}
			}
			switch rnd.IntN(4) {
			case 0:
				appendRaw(t, j, recs...) // killed: no index
			case 1:
				appendRecords(t, j, recs...)
				if rnd.IntN(3) == 0 { // a damaged index (any byte of it): read past
					data, _ := os.ReadFile(j.Layout().ItemIndex)
					if len(data) > 0 {
						data[rnd.IntN(len(data))] ^= 0x20
						os.WriteFile(j.Layout().ItemIndex, data, 0o600)
					}
				}
			default:
				appendRecords(t, j, recs...)
			}
			checkAgrees(t, j, seed)
		}
	}
}

// checkAgrees fails when LoadItemStates and ReadItemStates differ.
func checkAgrees(t *testing.T, j *Job, seed uint64) {
	t.Helper()
	full, err := j.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	s, err := j.LoadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]ItemRecord{}
	for i, rec := range full {
		if s.State(i) != rec.State {
			t.Fatalf("seed %d: item %d: state %q, the log has %q", seed, i, s.State(i), rec.State)
		}
		if rec.State == ItemRunning {
			want[i] = rec
		}
	}
	if got := s.Running(); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("seed %d: running %+v, the log has %+v", seed, got, want)
	}
}

// An ItemLog whose log another process appended to meanwhile writes no
// index (its states lack the other's lines), and an index beyond the log
// (a log cut short) is not read.
func TestItemIndexOnlyOfWhatTheLogHas(t *testing.T) {
	j := itemJob(t)
	a, err := j.OpenItemLog()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ItemRecord{Index: 0, ID: "a", State: ItemSucceeded}); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, j, ItemRecord{Index: 1, ID: "b", State: ItemDLQ}) // another ItemLog
	if err := a.Append(ItemRecord{Index: 2, ID: "c", State: ItemSkipped}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	checkAgrees(t, j, 0)
	if s, _ := j.LoadItemStates(); s.State(1) != ItemDLQ {
		t.Errorf("item 1: %q, want %q (the other ItemLog's record)", s.State(1), ItemDLQ)
	}

	if err := os.Truncate(j.Layout().ItemStates, 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := j.LoadItemStates(); s.Count(ItemSucceeded)+s.Count(ItemDLQ)+s.Count(ItemSkipped) != 0 {
		t.Errorf("an emptied log read with its old index: %d finished items", s.Count(ItemSucceeded)+s.Count(ItemDLQ)+s.Count(ItemSkipped))
	}
}
