package dlq_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/runnerdev/runner/dlq"
)

func summary(t *testing.T, d *dlq.DB) dlq.Summary {
	t.Helper()
	s, err := d.Summary()
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return s
}

// The summary follows every change of the items, the latest last failure
// among those that remain included; leases leave the generation alone.
func TestSummaryFollowsChanges(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
	check := func(step string, items int, last time.Time, gen uint64) {
		t.Helper()
		if s := summary(t, d); s.Items != items || !s.LastFailure.Equal(last) || s.Generation != gen {
			t.Errorf("%s: summary %+v, want %d items, last failure %s, generation %d", step, s, items, last, gen)
		}
	}
	check("empty", 0, time.Time{}, 0)
	t1, t2, t3 := t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	if err := d.Add(entry("a", 0, t0, "x"), entry("b", 1, t2, "y")); err != nil {
		t.Fatal(err)
	}
	check("two added", 2, t2, 1)
	if err := d.Add(entry("a", 0, t3, "x")); err != nil { // a fails again, later
		t.Fatal(err)
	}
	check("a failed again", 2, t3, 2)
	if _, err := d.Claim("me", t3, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := d.Release("me", "a"); err != nil {
		t.Fatal(err)
	}
	check("leases", 2, t3, 2)
	if n, err := d.Remove("a", "nope"); n != 1 || err != nil {
		t.Fatalf("Remove = %d, %v", n, err)
	}
	check("a removed", 1, t2, 3)
	if n, err := d.Remove("nope"); n != 0 || err != nil {
		t.Fatalf("Remove = %d, %v", n, err)
	}
	check("nothing removed", 1, t2, 3)
	if err := d.Add(entry("c", 2, t1, "z")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Purge(t2); err != nil { // c only
		t.Fatal(err)
	}
	check("c purged", 1, t2, 5)
	if _, _, err := d.Purge(time.Time{}); err != nil {
		t.Fatal(err)
	}
	check("all purged", 0, time.Time{}, 6)
}

// A file of format "1" (before the summary) is counted by a scan when
// read, and given the summary by its next write open.
func TestSummaryOfFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	d := open(t, path, dlq.Options{})
	if err := d.Add(entry("a", 0, t0, "x"), entry("b", 1, t0.Add(time.Hour), "y")); err != nil {
		t.Fatal(err)
	}
	d.Close()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error { // as runner wrote format 1
		if err := tx.DeleteBucket([]byte("last")); err != nil {
			return err
		}
		m := tx.Bucket([]byte("meta"))
		if err := m.Delete([]byte("summary")); err != nil {
			return err
		}
		return m.Put([]byte("version"), []byte("1"))
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := dlq.Summary{Items: 2, LastFailure: t0.Add(time.Hour)}
	r := open(t, path, dlq.Options{ReadOnly: true})
	if s := summary(t, r); s.Items != want.Items || !s.LastFailure.Equal(want.LastFailure) {
		t.Errorf("format 1, read-only: %+v, want %+v", s, want)
	}
	r.Close()
	w := open(t, path, dlq.Options{})
	if n, err := w.Remove("b"); n != 1 || err != nil {
		t.Fatalf("Remove = %d, %v", n, err)
	}
	if s := summary(t, w); s.Items != 1 || !s.LastFailure.Equal(t0) || s.Generation != 1 {
		t.Errorf("format 1 after a write: %+v, want 1 item, last failure %s, generation 1", s, t0)
	}
}
