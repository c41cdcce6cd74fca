package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow"
)

// docPages are the user docs: the README and the pages of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/ (%v)", err)
	}
	return append([]string{"README.md"}, pages...)
}

// Every ```yaml block of the README and of docs/ is a valid workflow, and
// so is each variant its comments offer: a line `key: value  # a, b, c`
// (value one of a, b, c) lists values the block takes in value's place.
func TestDocsWorkflowsValidate(t *testing.T) {
	blocks, variants := 0, 0
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatchIndex(data, -1) {
			blocks++
			line := 1 + strings.Count(string(data[:b[2]]), "\n")
			block := string(data[b[2]:b[3]])
			if _, err := workflow.Parse(page+" block at line "+strconv.Itoa(line), []byte(block)); err != nil {
				t.Errorf("%v", err)
			}
			for _, v := range offeredVariants(block) {
				variants++
				where := page + " block at line " + strconv.Itoa(line) + " with " + v.value
				if _, err := workflow.Parse(where, []byte(v.block)); err != nil {
					t.Errorf("%v", err)
				}
			}
		}
	}
	if blocks == 0 || variants == 0 {
		t.Fatalf("%d yaml blocks and %d offered values in the docs: the scan is broken", blocks, variants)
	}
}

// A variant is a yaml block with one value replaced by another its
// comment offers.
type variant struct{ block, value string }

// offeredVariants returns block with each value that a line's comment
// offers in place of the line's own.
func offeredVariants(block string) []variant {
	offer := regexp.MustCompile(`^(\s*(?:- )?[a-z_]+: )([a-z_]+)(\s*#\s*)([a-z_]+(?:, [a-z_]+)+)\s*$`)
	lines := strings.Split(block, "\n")
	var out []variant
	for i, l := range lines {
		m := offer.FindStringSubmatch(l)
		if m == nil || !slices.Contains(strings.Split(m[4], ", "), m[2]) {
			continue
		}
		for _, v := range strings.Split(m[4], ", ") {
			changed := slices.Clone(lines)
			changed[i] = m[1] + v
			out = append(out, variant{strings.Join(changed, "\n"), v})
		}
	}
	return out
}

// Every relative link of the README and of docs/ names a file that is
// there and, with #anchor, a heading of that file.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !headingAnchors(t, path)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, target, path, anchor)
			}
		}
	}
}

// stripCode removes fenced code blocks and code spans, whose text is not
// a link.
func stripCode(s string) string {
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(stripFences(s), "")
}

// stripFences removes fenced code blocks, whose lines are not headings.
func stripFences(s string) string {
	return regexp.MustCompile("(?s)```.*?```").ReplaceAllString(s, "")
}

// headingAnchors are the anchors of a markdown file's headings, as GitHub
// makes them: lower case, punctuation dropped, spaces made hyphens.
func headingAnchors(t *testing.T, path string) map[string]bool {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	for _, line := range strings.Split(stripFences(string(data)), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")] = true
		}
	}
	return anchors
}
