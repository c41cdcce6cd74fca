package gitwork

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/runnerdev/runner/internal/proc"
)

// Bundle is what a git bundle's header says: the commits a repository
// must have to fetch from it (its prerequisites) and the refs it holds,
// by name.
type Bundle struct {
	Prerequisites []string
	Heads         map[string]string
}

// HasCommit reports whether the repository holds commit sha.
func (g Git) HasCommit(ctx context.Context, sha string) bool {
	return g.Run(ctx, "cat-file", "-e", sha+"^{commit}").Kind == proc.KindOK
}

// CreateBundle writes to path a bundle of ref (a full ref name, which the
// bundle holds under that name) with the history that base lacks; base ""
// bundles all of ref's history.
func (g Git) CreateBundle(ctx context.Context, path, ref, base string) error {
	args := []string{"bundle", "create", "-q", path, ref}
	if base != "" {
		args = append(args, "^"+base)
	}
	_, err := g.Output(ctx, args...)
	return err
}

// VerifyBundle checks that the bundle at path is whole and that the
// repository has its prerequisites.
func (g Git) VerifyBundle(ctx context.Context, path string) error {
	_, err := g.Output(ctx, "bundle", "verify", "-q", path)
	return err
}

// FetchBundle verifies the bundle at path (VerifyBundle) and fetches its
// ref into the repository's ref to, moving to wherever it pointed before.
// Both read every ref of the repository, worktrees' included: a worktree
// being added or removed meanwhile makes them fail. A fetch that fails
// says git's whole message (failed): its reason comes before its last
// error line ("some local refs could not be updated").
func (g Git) FetchBundle(ctx context.Context, path, ref, to string) error {
	if err := g.VerifyBundle(ctx, path); err != nil {
		return err
	}
	if res := g.Run(ctx, "fetch", "-q", "--no-tags", "--no-write-fetch-head", path, "+"+ref+":"+to); res.Kind != proc.KindOK {
		return failed("git fetch", res)
	}
	return nil
}

// SetRef points ref (a full ref name) at commit sha.
func (g Git) SetRef(ctx context.Context, ref, sha string) error {
	_, err := g.Output(ctx, "update-ref", ref, sha)
	return err
}

// DeleteRef deletes ref (a full ref name); one that is not there is not
// an error.
func (g Git) DeleteRef(ctx context.Context, ref string) error {
	_, err := g.Output(ctx, "update-ref", "-d", ref)
	return err
}

// ReadBundle reads the header of the bundle at path (format v2 or v3).
func ReadBundle(path string) (Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return Bundle{}, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	sig, err := r.ReadString('\n')
	if err != nil || (sig != "# v2 git bundle\n" && sig != "# v3 git bundle\n") {
		return Bundle{}, fmt.Errorf("%s is not a git bundle", path)
	}
	b := Bundle{Heads: map[string]string{}}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return Bundle{}, fmt.Errorf("%s: the bundle's header is cut short", path)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return b, nil
		case strings.HasPrefix(line, "@"): // v3 capability
		case strings.HasPrefix(line, "-"):
			sha, _, _ := strings.Cut(line[1:], " ")
			b.Prerequisites = append(b.Prerequisites, sha)
		default:
			sha, ref, ok := strings.Cut(line, " ")
			if !ok {
				return Bundle{}, fmt.Errorf("%s: bad line in the bundle's header: %q", path, line)
			}
			b.Heads[ref] = sha
		}
	}
}
