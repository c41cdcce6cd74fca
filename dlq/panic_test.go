package dlq

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A panic in the code a transaction runs is a bug and goes on; it must not
// read as a damaged file.
func TestBugPanicIsNotDamage(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "dlq.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tt := range []struct {
		name string
		fn   func(*bolt.Tx) error
	}{
		{"panic", func(*bolt.Tx) error { panic("a bug") }},
		{"nil map", func(*bolt.Tx) error {
			var m map[string]int
			m["x"] = 1
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				err = d.view("test", tt.fn)
			}()
			if got == nil {
				t.Fatalf("view returned %v; want the panic to go on", err)
			}
		})
	}
}
