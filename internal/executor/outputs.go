package executor

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// stepOutputs finds the files of a step's outputs (Prodigy's outputs:
// {NAME: {file_pattern: GLOB}}) among those the step created or changed:
// first the files it left uncommitted, then those its commits changed,
// newest commit first; the first file matching a pattern is that output,
// as a path from the top of the work tree. A pattern that matches none of
// them fails the step.
func (t *commitTracker) stepOutputs(ctx context.Context) (map[string]string, error) {
	files, err := t.g.DirtyPaths(ctx)
	if err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	if head, err := t.g.Head(ctx); err == nil && head != "" && head != t.base {
		rng := head
		if t.base != "" {
			rng = t.base + ".." + head
		}
		log, err := t.g.Output(ctx, "log", "--name-only", "--format=", rng)
		if err != nil {
			return nil, fmt.Errorf("outputs: %w", err)
		}
		files = append(files, strings.Fields(log)...)
	}
	found := map[string]string{}
	for _, out := range t.step.Outputs {
		for _, f := range files {
			if outputMatches(out.Pattern, f) {
				found[out.Name] = f
				break
			}
		}
		if _, ok := found[out.Name]; !ok {
			return nil, fmt.Errorf("outputs.%s: the step created or changed no file matching %q", out.Name, out.Pattern)
		}
	}
	return found, nil
}

// outputMatches matches a pattern with a / against the whole path, and
// one without against the file's base name.
func outputMatches(pattern, file string) bool {
	if !strings.Contains(pattern, "/") {
		file = path.Base(file)
	}
	ok, _ := path.Match(pattern, file)
	return ok
}
