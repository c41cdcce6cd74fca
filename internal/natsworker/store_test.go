package natsworker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A new worker's store replaces the stores of dead workers (lock file
// there and free, or none a minute on) and leaves a live worker's store
// and one being made (no lock file yet) alone.
func TestNewStoreSweepsDeadWorkersStores(t *testing.T) {
	tmp := t.TempDir()
	live, releaseLive, err := NewStore(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseLive()
	dead := filepath.Join(tmp, storePrefix+"dead")
	making := filepath.Join(tmp, storePrefix+"making")
	diedMaking := filepath.Join(tmp, storePrefix+"died-making")
	for _, f := range []string{filepath.Join(dead, storeLock), filepath.Join(dead, "job", "logs", "item-1.log"), filepath.Join(making, storeLock+".new"), filepath.Join(diedMaking, storeLock+".new")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(diedMaking, time.Time{}, time.Now().Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}

	dir, release, err := NewStore(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{dead: false, making: true, diedMaking: false, live: true, dir: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: there %t, want %t", filepath.Base(path), err == nil, want)
		}
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("release left the store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, storeLock)); err != nil {
		t.Errorf("the live worker's lock file: %v", err)
	}
}
