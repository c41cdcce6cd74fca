package dlq_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/testkit"
)

// envClaimer switches the test binary into a claiming child process:
// DLQ_TEST_CLAIMER=path,owner.
const envClaimer = "DLQ_TEST_CLAIMER"

func TestMain(m *testing.M) {
	if v := os.Getenv(envClaimer); v != "" {
		path, owner, _ := strings.Cut(v, ",")
		for { // start together: wait for the parent's go file
			if _, err := os.Stat(path + ".go"); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		got, err := claimAll(path, owner)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(got, "\n"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const nClaimIDs = 200

func claimIDs() []string {
	ids := make([]string, nClaimIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("id%03d", i)
	}
	return ids
}

// claimFile makes a queue holding claimIDs.
func claimFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dlq.db")
	d := open(t, path, dlq.Options{})
	var batch []dlq.Entry
	for i, id := range claimIDs() {
		batch = append(batch, entry(id, i, t0, "m"))
	}
	if err := d.Add(batch...); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// claimAll claims every id in small chunks, three passes, opening and
// closing the file for every chunk the way `runner dlq retry` does, and
// returns the ids it got (a renewal returns an id again). Owners whose
// name ends in 2 go backwards, to meet the others in the middle.
func claimAll(path, owner string) ([]string, error) {
	var got []string
	ids := claimIDs()
	if strings.HasSuffix(owner, "2") {
		slices.Reverse(ids)
	}
	until := time.Now().Add(time.Hour)
	for range 3 {
		for chunk := range slices.Chunk(ids, 7) {
			d, err := dlq.Open(path, dlq.Options{Timeout: testkit.Scale(200 * time.Millisecond)})
			if errors.Is(err, dlq.ErrLocked) {
				continue // try the next chunk; a later pass comes back
			}
			if err != nil {
				return nil, err
			}
			c, err := d.Claim(owner, until, chunk...)
			if cerr := d.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
			got = append(got, c...)
			// Leave the file alone for a moment, as `runner dlq retry`
			// does while it runs the items: a back-to-back writer starves
			// the other process, whose lock attempts poll every 50ms.
			time.Sleep(2 * time.Millisecond)
		}
	}
	return got, nil
}

// checkExclusive fails unless every id went to exactly one owner.
func checkExclusive(t *testing.T, got map[string][]string) {
	t.Helper()
	owner := map[string]string{}
	for o, ids := range got {
		for _, id := range ids {
			if prev, ok := owner[id]; ok && prev != o {
				t.Errorf("%s claimed by both %s and %s", id, prev, o)
			}
			owner[id] = o
		}
	}
	if len(owner) != nClaimIDs {
		t.Errorf("%d of %d ids claimed", len(owner), nClaimIDs)
	}
	for o, ids := range got {
		t.Logf("%s claimed %d ids", o, len(slices.Compact(slices.Sorted(slices.Values(ids)))))
	}
}

func TestClaimGoroutines(t *testing.T) {
	path := claimFile(t)
	got := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, owner := range []string{"g1", "g2"} {
		wg.Go(func() {
			<-start
			ids, err := claimAll(path, owner)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got[owner] = ids
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	checkExclusive(t, got)
}

func TestClaimProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := claimFile(t)
	owners := []string{"p1", "p2"}
	outs := make([]bytes.Buffer, len(owners))
	var cmds []*exec.Cmd
	for i, owner := range owners {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envClaimer+"="+path+","+owner)
		cmd.Stdout, cmd.Stderr = &outs[i], os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	if err := os.WriteFile(path+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v", owners[i], err)
		}
		for sc := bufio.NewScanner(&outs[i]); sc.Scan(); {
			if sc.Text() != "" {
				got[owners[i]] = append(got[owners[i]], sc.Text())
			}
		}
	}
	checkExclusive(t, got)
}

func TestClaimRules(t *testing.T) {
	now := t0
	path := filepath.Join(t.TempDir(), "dlq.db")
	d := open(t, path, dlq.Options{Now: func() time.Time { return now }})
	if err := d.Add(entry("a", 0, t0, ""), entry("b", 1, t0, ""), entry("c", 2, t0, "")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		do    func() ([]string, error)
		want  []string
		clock time.Duration // advance the clock before the step
	}{
		{"unclaimed, missing and duplicate ids", claim(d, "A", t0.Add(time.Minute), "a", "zz", "a", "b"), []string{"a", "b"}, 0},
		{"held by another", claim(d, "B", t0.Add(time.Hour), "a", "b", "c"), []string{"c"}, 0},
		{"the same owner renews", claim(d, "A", t0.Add(2*time.Minute), "a", "c"), []string{"a"}, 0},
		{"not expired at until", claim(d, "B", t0.Add(time.Hour), "a"), nil, 2 * time.Minute},
		{"expired after until", claim(d, "B", t0.Add(time.Hour), "a", "b"), []string{"a", "b"}, time.Second},
		{"release by another owner is ignored", release(d, "A", "c"), nil, 0},
		{"still held", claim(d, "A", t0.Add(time.Hour), "c"), nil, 0},
		{"release by the owner", release(d, "B", "c"), nil, 0},
		{"free again", claim(d, "A", t0.Add(time.Hour), "c"), []string{"c"}, 0},
		{"remove ends the lease", func() ([]string, error) {
			if _, err := d.Remove("c"); err != nil {
				return nil, err
			}
			if err := d.Add(entry("c", 2, t0, "")); err != nil {
				return nil, err
			}
			return claim(d, "B", t0.Add(time.Hour), "c")()
		}, []string{"c"}, 0},
	}
	for _, st := range steps { // in order: each step sees the ones before
		now = now.Add(st.clock)
		got, err := st.do()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !slices.Equal(got, st.want) {
			t.Errorf("%s: got %v, want %v", st.name, got, st.want)
		}
	}
	if _, err := d.Claim("", t0, "a"); err == nil {
		t.Error("Claim with an empty owner succeeded")
	}
}

func claim(d *dlq.DB, owner string, until time.Time, ids ...string) func() ([]string, error) {
	return func() ([]string, error) { return d.Claim(owner, until, ids...) }
}

func release(d *dlq.DB, owner string, ids ...string) func() ([]string, error) {
	return func() ([]string, error) { return nil, d.Release(owner, ids...) }
}

// A lease whose holder is gone (Options.Gone) is free before it expires;
// Gone is asked once per holder in a claim, not once per item.
func TestClaimTakesOverFromAGoneHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	gone := map[string]bool{}
	asked := 0
	d, err := dlq.Open(path, dlq.Options{Gone: func(owner string) bool { asked++; return gone[owner] }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	items := []string{"a", "b", "c"}
	for _, id := range items {
		if err := d.Add(dlq.Entry{ItemID: id, Failure: dlq.Failure{Message: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	until := time.Now().Add(24 * time.Hour)
	if got, _ := d.Claim("crashed", until, items...); len(got) != 3 {
		t.Fatal("first claim failed")
	}
	if got, _ := d.Claim("other", until, items...); len(got) != 0 {
		t.Fatal("a live holder's leases were taken")
	}
	gone["crashed"] = true
	asked = 0
	if got, _ := d.Claim("other", until, items...); len(got) != 3 {
		t.Errorf("the leases of a gone holder were not taken over: %v", got)
	}
	if asked != 1 {
		t.Errorf("Gone asked %d times for one holder of 3 items", asked)
	}
}
