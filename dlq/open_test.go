package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/testkit"
)

// openWithin runs Open in a goroutine and fails the test if it hangs.
func openWithin(t *testing.T, path string, opts dlq.Options) (*dlq.DB, error) {
	t.Helper()
	type result struct {
		d   *dlq.DB
		err error
	}
	ch := make(chan result, 1)
	go func() {
		d, err := dlq.Open(path, opts)
		ch <- result{d, err}
	}()
	select {
	case r := <-ch:
		if r.d != nil {
			t.Cleanup(func() { r.d.Close() })
		}
		return r.d, r.err
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatalf("Open(%s) hung", path)
		return nil, nil
	}
}

func TestLocked(t *testing.T) {
	tests := []struct {
		name          string
		first, second bool // ReadOnly
		locked        bool
	}{
		{"writer blocks writer", false, false, true},
		{"writer blocks reader", false, true, true},
		{"reader blocks writer", true, false, true},
		{"readers share", true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dlq.db")
			open(t, path, dlq.Options{}).Close() // create it
			first := open(t, path, dlq.Options{ReadOnly: tt.first})

			_, err := openWithin(t, path, dlq.Options{ReadOnly: tt.second, Timeout: 100 * time.Millisecond})
			if !tt.locked {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			if !errors.Is(err, dlq.ErrLocked) {
				t.Fatalf("Open = %v, want ErrLocked", err)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "locked by another process; try again") {
				t.Errorf("message %q lacks the path or the advice", msg)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := openWithin(t, path, dlq.Options{ReadOnly: tt.second, Timeout: 100 * time.Millisecond}); err != nil {
				t.Errorf("Open after Close: %v", err)
			}
		})
	}
}

// templates caches the bytes of valid files by item count.
var templates sync.Map

// validFile writes a queue with n items, each with a history of three
// failures, and returns its path.
func validFile(t *testing.T, n int) string {
	t.Helper()
	b, ok := templates.Load(n)
	if !ok {
		path := filepath.Join(t.TempDir(), "template.db")
		d := open(t, path, dlq.Options{})
		var batch []dlq.Entry
		for i := range n {
			e := entry(fmt.Sprint("item_", i), i, t0, strings.Repeat("x", 200))
			batch = append(batch, e, e, e)
		}
		if err := d.Add(batch...); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = templates.LoadOrStore(n, data)
	}
	return write(t, b.([]byte))
}

func TestDamaged(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
	tests := []struct {
		name   string
		damage func(t *testing.T) string // returns the path
	}{
		{"random bytes", func(t *testing.T) string { return write(t, random(64<<10)) }},
		{"a few random bytes", func(t *testing.T) string { return write(t, random(100)) }},
		{"text", func(t *testing.T) string { return write(t, []byte("not a database\n")) }},
		{"truncated to half", func(t *testing.T) string { return truncate(t, validFile(t, 300), 0.5) }},
		{"truncated to one page", func(t *testing.T) string { return truncate(t, validFile(t, 300), 0) }},
		{"truncated near the end", func(t *testing.T) string { return truncate(t, validFile(t, 300), 0.99) }},
		{"meta pages zeroed", func(t *testing.T) string {
			path := validFile(t, 50)
			overwrite(t, path, 0, make([]byte, 2*os.Getpagesize()))
			return path
		}},
	}
	for _, tt := range tests {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", tt.name, ro), func(t *testing.T) {
				path := tt.damage(t)
				d, err := openWithin(t, path, dlq.Options{ReadOnly: ro})
				if err == nil {
					d.Close()
					t.Fatal("Open succeeded on a damaged file")
				}
				if !errors.Is(err, dlq.ErrDamaged) || !strings.HasPrefix(err.Error(), "dlq: "+path+": damaged: ") {
					t.Errorf("Open = %q, want \"dlq: %s: damaged: ...\"", err, path)
				}
				// The failed Open released its lock: a writer gets the same
				// answer, not ErrLocked.
				_, err = openWithin(t, path, dlq.Options{Timeout: 100 * time.Millisecond})
				if !errors.Is(err, dlq.ErrDamaged) {
					t.Errorf("second Open = %v, want ErrDamaged", err)
				}
			})
		}
	}
}

// TestGarbagePages damages the data pages behind valid meta pages: every
// operation must return (an error or a result), never panic or hang.
func TestGarbagePages(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			path := validFile(t, 100)
			rnd := rand.New(rand.NewPCG(seed, 7))
			fi, _ := os.Stat(path)
			page := int64(os.Getpagesize())
			for range 8 { // scribble over some pages after the two meta pages
				off := 2*page + rnd.Int64N(fi.Size()-2*page)
				b := make([]byte, 1+rnd.IntN(int(page)))
				for i := range b {
					b[i] = byte(rnd.Uint32())
				}
				overwrite(t, path, off, b)
			}
			done := make(chan error, 1)
			go func() {
				d, err := dlq.Open(path, dlq.Options{ReadOnly: seed%2 == 0})
				if err != nil {
					done <- err
					return
				}
				defer d.Close()
				errs := []error{d.List(func(dlq.Item) bool { return true })}
				_, err = d.Get("item_42")
				_, err2 := d.Count()
				done <- errors.Join(append(errs, err, err2)...)
			}()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, dlq.ErrDamaged) && !errors.Is(err, dlq.ErrNotFound) {
					t.Logf("not reported as damaged: %v", err)
				}
			case <-time.After(testkit.Scale(10 * time.Second)):
				t.Fatal("hung on a damaged file")
			}
		})
	}
}

func TestUnsupportedFormatVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return m.Put([]byte("version"), []byte("99"))
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.Open(path, dlq.Options{}); err == nil || !strings.Contains(err.Error(), `format version "99"`) {
		t.Errorf("Open = %v, want a format version error", err)
	}
}

func TestReadOnlyMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dlq.db")
	d := open(t, path, dlq.Options{ReadOnly: true})
	if n, err := d.Count(); n != 0 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
	if _, err := d.Get("x"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
	if got := ids(t, d); got != nil {
		t.Errorf("List = %v", got)
	}
	if err := d.Add(entry("x", 0, t0, "")); err == nil {
		t.Error("Add on a read-only view succeeded")
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only Open created something: %v", err)
	}
}

func TestReadOnlyRejectsWrites(t *testing.T) {
	path := validFile(t, 3)
	d := open(t, path, dlq.Options{ReadOnly: true})
	if err := d.Add(entry("x", 0, t0, "")); err == nil {
		t.Error("Add succeeded")
	}
	if _, err := d.Remove("item_1"); err == nil {
		t.Error("Remove succeeded")
	}
	if _, err := d.Claim("me", t0, "item_1"); err == nil {
		t.Error("Claim succeeded")
	}
	if n, err := d.Count(); n != 3 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
}

func TestFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs", "j1", "dlq.db")
	open(t, path, dlq.Options{})
	for _, tt := range []struct {
		path string
		mode fs.FileMode
	}{
		{path, 0o600},
		{filepath.Dir(path), fs.ModeDir | 0o700},
	} {
		fi, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tt.mode {
			t.Errorf("%s: mode %v, want %v", tt.path, fi.Mode(), tt.mode)
		}
	}
}

func write(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dlq.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// truncate cuts the file to frac of the size its pages need (bbolt's
// tx.Size; the file itself is usually longer), but keeps at least one page.
func truncate(t *testing.T, path string, frac float64) string {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var need int64
	err = b.View(func(tx *bolt.Tx) error { need = tx.Size(); return nil })
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	size := max(int64(float64(need)*frac), int64(os.Getpagesize())+100)
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return path
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// A 0-byte file is reported as damaged by readers and writers alike, and
// left as it is (bbolt would make it a new, empty queue).
func TestEmptyFileIsDamaged(t *testing.T) {
	for _, ro := range []bool{true, false} {
		t.Run(fmt.Sprintf("ReadOnly=%v", ro), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dlq.db")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := openWithin(t, path, dlq.Options{ReadOnly: ro})
			if !errors.Is(err, dlq.ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v, want damaged naming %s", err, path)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
				t.Errorf("the file was changed: %v, %v", fi, err)
			}
		})
	}
}

// With Options.Wait, Open waits for another process's lock as long as the
// context lasts, instead of failing after Timeout.
func TestOpenWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	first := open(t, path, dlq.Options{})
	waited := make(chan struct{}, 1)
	ch := make(chan error, 1)
	go func() {
		d, err := dlq.Open(path, dlq.Options{Timeout: 20 * time.Millisecond, Wait: t.Context(), Waiting: func() {
			select {
			case waited <- struct{}{}:
			default:
			}
		}})
		if err == nil {
			d.Close()
		}
		ch <- err
	}()
	select {
	case <-waited:
	case err := <-ch:
		t.Fatalf("Open returned %v while the file was held", err)
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("Open neither waited nor returned")
	}
	first.Close()
	select {
	case err := <-ch:
		if err != nil {
			t.Errorf("Open after the holder closed = %v", err)
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("Open hung after the holder closed")
	}

	held := open(t, path, dlq.Options{})
	defer held.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := openWithin(t, path, dlq.Options{Timeout: 20 * time.Millisecond, Wait: ctx}); !errors.Is(err, dlq.ErrLocked) {
		t.Errorf("Open with an ended context = %v, want ErrLocked", err)
	}
}
