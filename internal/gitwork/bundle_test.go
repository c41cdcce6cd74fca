package gitwork

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A thin bundle carries a branch's new commits to a clone that has its
// base: verified, fetched under a ref of the clone's own; its header
// names the base as its one prerequisite. A clone without the base
// cannot verify it; a bundle cut short is not fetched.
func TestBundleRoundTrip(t *testing.T) {
	ctx := t.Context()
	src := newRepo(t)
	base := must(t, src, "rev-parse", "HEAD")
	clone := Git{Dir: t.TempDir(), Env: src.Env}
	must(t, clone, "clone", "-q", src.Dir, ".")
	must(t, src, "switch", "-q", "-c", "item")
	head := commitFile(t, src, "new.txt", "new\n", "new")
	if clone.HasCommit(ctx, head) {
		t.Fatal("the clone has the new commit before the fetch")
	}
	path := filepath.Join(t.TempDir(), "item.bundle")
	if err := src.CreateBundle(ctx, path, "refs/heads/item", base); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Bundle{Prerequisites: []string{base}, Heads: map[string]string{"refs/heads/item": head}}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("header %+v, want %+v", b, want)
	}
	if err := clone.VerifyBundle(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := clone.FetchBundle(ctx, path, "refs/heads/item", "refs/runner/got"); err != nil {
		t.Fatal(err)
	}
	if got := must(t, clone, "rev-parse", "refs/runner/got"); got != head || !clone.HasCommit(ctx, head) {
		t.Fatalf("fetched %s, want %s", got, head)
	}

	empty := Git{Dir: t.TempDir(), Env: src.Env}
	must(t, empty, "init", "-q")
	if err := empty.VerifyBundle(ctx, path); err == nil {
		t.Fatal("a repository without the prerequisite verified the bundle")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-30], 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := Git{Dir: t.TempDir(), Env: src.Env}
	must(t, fresh, "clone", "-q", "--no-local", "--single-branch", "-b", "main", src.Dir, ".")
	if fresh.HasCommit(ctx, head) {
		t.Fatal("the fresh clone has the new commit")
	}
	if err := fresh.VerifyBundle(ctx, path); err == nil {
		if err := fresh.FetchBundle(ctx, path, "refs/heads/item", "refs/runner/got"); err == nil {
			t.Fatal("a bundle cut short was fetched")
		}
	}
}

// A fetch into a ref that a ref of the repository is in the way of fails
// with git's reason, not only its last line ("some local refs could not
// be updated").
func TestFetchBundleSaysWhy(t *testing.T) {
	ctx := t.Context()
	src := newRepo(t)
	path := filepath.Join(t.TempDir(), "all.bundle")
	if err := src.CreateBundle(ctx, path, "refs/heads/main", ""); err != nil {
		t.Fatal(err)
	}
	dst := Git{Dir: t.TempDir(), Env: src.Env}
	must(t, dst, "init", "-q")
	if err := dst.FetchBundle(ctx, path, "refs/heads/main", "refs/heads/job"); err != nil {
		t.Fatal(err)
	}
	err := dst.FetchBundle(ctx, path, "refs/heads/main", "refs/heads/job/1")
	if err == nil || !strings.Contains(err.Error(), "cannot lock ref 'refs/heads/job/1'") {
		t.Fatalf("fetch into a ref whose parent is a branch: %v, want git's reason", err)
	}
}
