package gitwork

import (
	"context"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/proc"
)

// DiffStat is what a range of commits changed: the files it added,
// modified (a type change included) and deleted, each in git's order, and
// the lines it inserted and deleted (binary files count no lines).
type DiffStat struct {
	Added, Modified, Deleted []string
	Insertions, Deletions    int
}

// Files are all the files the range changed: added, modified, then deleted.
func (d DiffStat) Files() []string {
	return append(append(append([]string{}, d.Added...), d.Modified...), d.Deleted...)
}

// Diff returns what from..to changed (renames as a deletion and an
// addition). "A...B" as from with to "" is git's form for what B changed
// since its merge base with A.
func (g Git) Diff(ctx context.Context, from, to string) (DiffStat, error) {
	rng := []string{from}
	if to != "" {
		rng = append(rng, to)
	}
	var d DiffStat
	names, err := g.diff(ctx, append([]string{"--name-status"}, rng...))
	if err != nil {
		return d, err
	}
	for i := 0; i+1 < len(names); i += 2 {
		switch path := names[i+1]; names[i][0] {
		case 'A':
			d.Added = append(d.Added, path)
		case 'D':
			d.Deleted = append(d.Deleted, path)
		default:
			d.Modified = append(d.Modified, path)
		}
	}
	counts, err := g.diff(ctx, append([]string{"--numstat"}, rng...))
	if err != nil {
		return d, err
	}
	for _, c := range counts {
		ins, del, _ := strings.Cut(c, "\t")
		del, _, _ = strings.Cut(del, "\t")
		n, _ := strconv.Atoi(ins) // "-" for a binary file
		m, _ := strconv.Atoi(del)
		d.Insertions, d.Deletions = d.Insertions+n, d.Deletions+m
	}
	return d, nil
}

// diff runs git diff -z --no-renames with args and returns its NUL-separated
// fields.
func (g Git) diff(ctx context.Context, args []string) ([]string, error) {
	res := g.Run(ctx, append([]string{"diff", "-z", "--no-renames", "--no-ext-diff"}, args...)...)
	if res.Kind != proc.KindOK {
		return nil, failed("git diff", res)
	}
	out := strings.TrimSuffix(string(res.Stdout), "\x00")
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\x00"), nil
}
