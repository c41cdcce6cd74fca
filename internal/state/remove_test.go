package state

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"
)

// A buried job is gone for every listing and lookup, and its id cannot be
// taken again, until its removal ends: Tombstones and OpenTombstone find
// it, whole while its metadata is there, and Remove ends it.
func TestBuriedJobIsNoJob(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	j, err := s.Create(Meta{ID: "j", Started: time.Unix(100, 0)}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Unlock()
	if err := j.Bury(); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.IDs(); err != nil || len(ids) != 0 {
		t.Errorf("IDs = %q, %v; want none", ids, err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List = %+v, %v; want none", list, err)
	}
	for _, arg := range []string{"j", ".rm-j", ".rm-"} {
		if _, err := s.Open(arg); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%q) = %v, want ErrNotFound", arg, err)
		}
		if id, err := s.Find(arg); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(%q) = %q, %v; want ErrNotFound", arg, id, err)
		}
	}
	if id, err := s.Latest(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Latest = %q, %v; want ErrNotFound", id, err)
	}
	if _, err := s.Create(Meta{ID: "j"}, nil); !errors.Is(err, ErrBuried) {
		t.Errorf("Create over a tombstone: %v, want ErrBuried", err)
	}
	if _, err := s.Find("j"); !errors.Is(err, ErrBuried) {
		t.Errorf("Find of a buried job: %v, want ErrBuried too", err)
	}
	if ids, err := s.Tombstones(); err != nil || !slices.Equal(ids, []string{"j"}) {
		t.Errorf("Tombstones = %q, %v; want j", ids, err)
	}
	tomb, whole, err := s.OpenTombstone("j")
	if err != nil || !whole || tomb.Meta.ID != "j" || tomb.Dir != s.Layout("j").Tombstone {
		t.Fatalf("OpenTombstone = %+v, %v, %v; want the whole job in its tombstone", tomb, whole, err)
	}
	if data, err := os.ReadFile(tomb.WorkflowCopy()); err != nil || string(data) != "x" {
		t.Errorf("the tombstone's workflow copy: %q, %v", data, err)
	}
	// A removal cut short in its deletion: the metadata went first.
	if err := os.Remove(tomb.Layout().Meta); err != nil {
		t.Fatal(err)
	}
	tomb, whole, err = s.OpenTombstone("j")
	if err != nil || whole || tomb.Meta.ID != "j" {
		t.Fatalf("OpenTombstone without metadata = %+v, %v, %v; want its files alone", tomb, whole, err)
	}
	if err := tomb.Remove(); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.Tombstones(); err != nil || len(ids) != 0 {
		t.Errorf("Tombstones after Remove = %q, %v; want none", ids, err)
	}
	if _, err := s.Create(Meta{ID: "j"}, nil); err != nil {
		t.Errorf("Create once the removal ended: %v", err)
	}
}

// Remove of a job not buried buries it first, and leaves nothing.
func TestRemoveBuriesFirst(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	j, err := s.Create(Meta{ID: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Unlock()
	if err := j.Remove(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(s.jobsDir())
	if err != nil || len(entries) != 0 {
		t.Errorf("the jobs directory after Remove: %v, %v; want it empty", entries, err)
	}
}

// No job id starts with a dot: such names are jobs being made or removed.
func TestIDsStartingWithADot(t *testing.T) {
	for _, id := range []string{".", "..", ".j", ".rm-j", ".new-j-1"} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
		if err := CheckID(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("CheckID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	if !ValidID("j.1") {
		t.Error("ValidID(j.1) = false")
	}
}
