package main

import (
	"os"
	"path/filepath"
	"regexp"
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

// Every ```yaml block of the README and of docs/ is a valid workflow.
func TestDocsWorkflowsValidate(t *testing.T) {
	blocks := 0
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatchIndex(data, -1) {
			blocks++
			line := 1 + strings.Count(string(data[:b[2]]), "\n")
			if _, err := workflow.Parse(page+" block at line "+strconv.Itoa(line), data[b[2]:b[3]]); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no yaml blocks in the docs")
	}
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
