package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// jobBranch opens the tree of job id in the repository of testRepo, with
// a job branch runner/<id> that adds <id>.txt.
func jobBranch(t *testing.T, git func(string, ...string) string, id string) *Tree {
	t.Helper()
	dir := t.TempDir()
	tree, err := Open(t.Context(), JobRefs{ID: id}, nil, state.LayoutOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree.Root, id+".txt"), []byte(id+"\n"), 0o600)
	git(tree.Root, "add", id+".txt")
	git(tree.Root, "commit", "-qm", "work of "+id)
	if err := tree.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	return tree
}

// mergeLocked makes tree's final merge into main as finalMerge does,
// under the checkout lock.
func mergeLocked(t *testing.T, tree *Tree) error {
	unlock, err := tree.lockCheckout(t.Context(), nil)
	if err != nil {
		return err
	}
	defer unlock()
	return tree.mergeInto(t.Context(), "main")
}

// A checkout in the middle of the user's own merge is refused with the
// reason, and their merge (MERGE_HEAD, MERGE_MSG) is left as it was.
func TestMergeIntoRefusesTheUsersMerge(t *testing.T) {
	git, repo := testRepo(t)
	tree := jobBranch(t, git, "s")
	git(repo, "checkout", "-q", "-b", "theirs")
	os.WriteFile("f.txt", []byte("theirs\n"), 0o600)
	git(repo, "commit", "-qam", "theirs")
	git(repo, "checkout", "-q", "main")
	os.WriteFile("f.txt", []byte("ours\n"), 0o600)
	git(repo, "commit", "-qam", "ours")
	if err := exec.Command("git", "merge", "-q", "-m", "my merge", "theirs").Run(); err == nil {
		t.Fatal("the user's merge did not conflict")
	}
	head := git(repo, "rev-parse", "MERGE_HEAD")
	err := mergeLocked(t, tree)
	if err == nil || !strings.Contains(err.Error(), "your checkout is in the middle of a merge (MERGE_HEAD marks it") {
		t.Errorf("mergeInto a checkout mid-merge: %v", err)
	}
	if got := git(repo, "rev-parse", "MERGE_HEAD"); got != head {
		t.Errorf("MERGE_HEAD is %s, want the user's %s", got, head)
	}
	if msg, _ := os.ReadFile(".git/MERGE_MSG"); !bytes.HasPrefix(msg, []byte("my merge")) {
		t.Errorf("MERGE_MSG is %q", msg)
	}
}

// A job branch already merged into its target (by a runner killed before
// it recorded so) counts as merged, wherever the checkout is now.
func TestMergeIntoRecognisesAMadeMerge(t *testing.T) {
	git, repo := testRepo(t)
	tree := jobBranch(t, git, "s")
	git(repo, "merge", "-q", "--no-ff", "-m", "Merge runner/s (runner job s)", "runner/s")
	git(repo, "checkout", "-q", "-b", "elsewhere")
	if err := mergeLocked(t, tree); err != nil {
		t.Fatalf("merge of a merged branch: %v", err)
	}
	if n := git(repo, "rev-list", "--count", "--merges", "main"); n != "1" {
		t.Errorf("main has %s merges, want 1", n)
	}
}

// What the git merge of a runner killed holding the checkout lock left
// (the job's files staged with no MERGE_HEAD, as a kill in a
// pre-merge-commit hook leaves them; or the merge in progress with its
// message), the next holder undoes, whichever job it merges; not the
// user's changes, nor a merge of the user's.
func TestLockCheckoutUndoesAKilledMerge(t *testing.T) {
	for _, left := range []string{"staged", "in progress", "message not written", "user changes", "user's merge"} {
		for _, next := range []string{"s", "other"} {
			t.Run(left+" then "+next, func(t *testing.T) {
				git, repo := testRepo(t)
				dead := jobBranch(t, git, "s")
				switch left {
				case "staged":
					git(repo, "read-tree", "-u", "-m", git(repo, "merge-tree", "--write-tree", "HEAD", "runner/s"))
				case "in progress":
					git(repo, "merge", "-q", "--no-ff", "--no-commit", "-m", dead.mergeMessage(), "runner/s")
				case "message not written": // git writes MERGE_HEAD, then MERGE_MSG
					git(repo, "merge", "-q", "--no-ff", "--no-commit", "-m", dead.mergeMessage(), "runner/s")
					os.WriteFile(".git/MERGE_MSG", []byte("Merge run"), 0o600)
				case "user changes":
					os.WriteFile("f.txt", []byte("mine\n"), 0o600)
				case "user's merge":
					git(repo, "merge", "-q", "--no-ff", "--no-commit", "-m", "my merge", "runner/s")
				}
				// The record of the holder that died in its merge.
				lock := filepath.Join(repo, ".git", checkoutLock)
				os.WriteFile(lock, deadHolder(t, lock, dead), 0o600)

				tree := dead
				if next != "s" {
					tree = jobBranch(t, git, next)
				}
				err := mergeLocked(t, tree)
				switch left {
				case "user changes":
					if err == nil || !strings.Contains(err.Error(), "your checkout has changes not committed (f.txt)") {
						t.Errorf("merge with the user's changes: %v", err)
					}
					return
				case "user's merge":
					if err == nil || !strings.Contains(err.Error(), "in the middle of a merge") {
						t.Errorf("merge into the user's merge: %v", err)
					}
					if msg, _ := os.ReadFile(".git/MERGE_MSG"); !bytes.HasPrefix(msg, []byte("my merge")) {
						t.Errorf("MERGE_MSG is %q", msg)
					}
					return
				}
				if err != nil {
					t.Fatalf("merge: %v", err)
				}
				if msg := git(repo, "log", "-1", "--format=%s", "main"); msg != tree.mergeMessage() {
					t.Errorf("main ends with %q", msg)
				}
				if st := git(repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
					t.Errorf("the checkout has changes after the merge:\n%s", st)
				}
			})
		}
	}
}

// deadHolder is the record that tree would leave in the checkout lock at
// lock had it died holding it: its holder names a process that has exited.
func deadHolder(t *testing.T, lock string, tree *Tree) []byte {
	t.Helper()
	unlock, err := tree.lockCheckout(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	h := holder(data)
	unlock()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	h.Self = fmt.Sprintf("%d-1", exited.Process.Pid)
	data, err = json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// cancelOnWrite is a buffer that ends a context once written to.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	defer w.cancel()
	return w.Buffer.Write(p)
}

// The lock of final merges lets one holder at a time in a repository; a
// waiter says once who holds it, and gives up when its context ends (once
// it said so: on a loaded machine, a fixed time may end before it got to
// the lock).
func TestLockCheckout(t *testing.T) {
	git, _ := testRepo(t)
	first := jobBranch(t, git, "s")
	unlock, err := first.lockCheckout(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	second := &Tree{JobID: "other", Git: first.Git}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	said := &cancelOnWrite{cancel: cancel}
	if _, err := second.lockCheckout(ctx, said); err == nil {
		t.Fatal("a second holder took the held lock")
	}
	if got := said.String(); !strings.HasPrefix(got, "runner: waiting for runner job s (pid ") || strings.Count(got, "\n") != 1 {
		t.Errorf("the waiter said %q", got)
	}
	got := make(chan error, 1)
	go func() {
		unlock, err := second.lockCheckout(t.Context(), nil)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("the lock given back was not taken within 10 s")
	}
}

// A holder killed after git made its merge commit, in the post-merge hook
// or in the ref update before it, leaves MERGE_HEAD (git removes it only
// once the hook has run) and, killed in the ref update without its
// signal handler running, HEAD.lock: the next holder removes the lock
// file, keeps the merge and makes its own.
func TestLockCheckoutRemovesADeadHoldersLocks(t *testing.T) {
	git, repo := testRepo(t)
	dead := jobBranch(t, git, "s")
	next := jobBranch(t, git, "other")
	lock := filepath.Join(repo, ".git", checkoutLock)
	os.WriteFile(lock, deadHolder(t, lock, dead), 0o600)
	git(repo, "merge", "-q", "--no-ff", "-m", dead.mergeMessage(), "runner/s")
	os.WriteFile(".git/MERGE_HEAD", []byte(git(repo, "rev-parse", "runner/s")+"\n"), 0o600)
	os.WriteFile(".git/MERGE_MSG", []byte(dead.mergeMessage()+"\n"), 0o600)
	os.WriteFile(".git/HEAD.lock", nil, 0o600)

	if err := mergeLocked(t, next); err != nil {
		t.Fatalf("merge after a holder killed in its ref update: %v", err)
	}
	merges := git(repo, "log", "--merges", "--format=%s", "main")
	if want := next.mergeMessage() + "\n" + dead.mergeMessage(); merges != want {
		t.Errorf("main's merges are\n%s\nwant\n%s", merges, want)
	}
	for _, left := range []string{".git/HEAD.lock", ".git/MERGE_HEAD"} {
		if _, err := os.Stat(left); err == nil {
			t.Errorf("%s is still there", left)
		}
	}
}

// A lock file older than the dead holder's merge is not its own (the
// user's git may hold it): it stays, and the merge fails, naming the
// holder. The record of the dead holder stays too, so that the holder
// after, once the user's git is done, undoes its merge.
func TestLockCheckoutKeepsOthersLocks(t *testing.T) {
	git, repo := testRepo(t)
	dead := jobBranch(t, git, "s")
	next := jobBranch(t, git, "other")
	git(repo, "merge", "-q", "--no-ff", "--no-commit", "-m", dead.mergeMessage(), "runner/s")
	os.WriteFile(".git/index.lock", nil, 0o600)
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(".git/index.lock", hourAgo, hourAgo)
	lock := filepath.Join(repo, ".git", checkoutLock)
	os.WriteFile(lock, deadHolder(t, lock, dead), 0o600)

	err := mergeLocked(t, next)
	if err == nil || !strings.Contains(err.Error(), "undoing the merge that runner job s") {
		t.Fatalf("merge with the user's index.lock: %v", err)
	}
	if _, err := os.Stat(".git/index.lock"); err != nil {
		t.Errorf("the user's index.lock was removed: %v", err)
	}
	os.Remove(".git/index.lock")
	if err := mergeLocked(t, next); err != nil {
		t.Fatalf("merge once the user's git is done: %v", err)
	}
	merges := git(repo, "log", "--merges", "--format=%s", "main")
	if merges != next.mergeMessage() {
		t.Errorf("main's merges are %q, want %q alone", merges, next.mergeMessage())
	}
}
