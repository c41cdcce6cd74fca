package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A job is removed whole or not at all, whenever the process removing it
// dies: its directory is first renamed to its tombstone (Bury), one
// rename, after which no listing or lookup finds the job; what else goes
// with the job (its git worktrees and branches) goes next, then the
// tombstone, its metadata first (Remove). A removal cut short leaves a
// tombstone, which the next removal finishes (Tombstones,
// OpenTombstone): with its metadata, the job's other state may be left
// too; without, only its files are.

// Bury renames the job's directory to its tombstone (Layout.Tombstone);
// the job's paths are the tombstone's from then on. The caller holds the
// job's lock (Lock), which the rename keeps.
func (j *Job) Bury() error {
	tomb := j.Layout().Tombstone
	if err := os.Rename(j.Dir, tomb); err != nil {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	j.Dir, j.layout = tomb, LayoutOf(tomb)
	return nil
}

// isBuried reports whether the job's directory is its tombstone.
func (j *Job) isBuried() bool { return strings.HasPrefix(filepath.Base(j.Dir), tombstonePrefix) }

// Remove deletes the job's directory and all in it: buried first, if it
// is not yet, then its metadata, then the rest. The caller holds the
// job's lock (Lock), so that no process takes the job on meanwhile.
func (j *Job) Remove() error {
	if !j.isBuried() {
		if err := j.Bury(); err != nil {
			return err
		}
	}
	if err := os.Remove(j.Layout().Meta); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	if err := os.RemoveAll(j.Dir); err != nil {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	return nil
}

// buried reports whether job id has a tombstone: its removal was cut
// short.
func (s Store) buried(id string) bool {
	if !ValidID(id) {
		return false
	}
	_, err := os.Stat(s.Layout(id).Tombstone)
	return err == nil
}

// Tombstones returns the ids of the jobs whose removal was cut short:
// those whose directory is a tombstone still.
func (s Store) Tombstones() ([]string, error) {
	entries, err := s.entries()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutPrefix(e.Name(), tombstonePrefix); ok && e.IsDir() && ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// OpenTombstone opens the tombstone of job id as a job whose directory
// is the tombstone (to Lock and Remove it). whole says that its metadata
// is still there, read into Meta: the removal may have left the job's
// other state too (its paths are the job's before Bury:
// Store.Layout(id)). Without, Meta has only the ID.
func (s Store) OpenTombstone(id string) (j *Job, whole bool, err error) {
	if !ValidID(id) {
		return nil, false, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	layout := LayoutOf(s.Layout(id).Tombstone)
	if _, err := os.Stat(layout.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	j = &Job{Dir: layout.Dir, layout: layout, Meta: Meta{ID: id}}
	data, err := os.ReadFile(layout.Meta)
	if errors.Is(err, os.ErrNotExist) {
		return j, false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &j.Meta)
	}
	if err != nil {
		return nil, false, fmt.Errorf("job %s (its removal cut short): %w", id, err)
	}
	return j, true, nil
}
