package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every `runner ...` command line that the README and docs/ show names
// commands the binary has and flags those commands take: a page cannot
// offer what runner refuses.
func TestDocsCommandsExist(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	root := newRootCommand(&globalOptions{})
	lines := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range docCommandLines(string(data)) {
			lines++
			if cl.text == "runner frobnicate" { // the page's example of a wrong command
				continue
			}
			if err := checkCommandLine(root, cl.text); err != nil {
				t.Errorf("%s:%d: %s: %v", page, cl.line, cl.text, err)
			}
		}
	}
	if lines < 50 {
		t.Fatalf("found only %d runner command lines in the docs: the scan is broken", lines)
	}
}

// A docCommandLine is a runner command line a page shows, with its line.
type docCommandLine struct {
	text string
	line int
}

// docCommandLines returns the runner command lines of a Markdown page:
// the lines of its fenced blocks, and its code spans, that start with
// "runner " (after an optional "$ ").
func docCommandLines(page string) []docCommandLine {
	var out []docCommandLine
	add := func(text string, line int) {
		text = strings.TrimPrefix(strings.TrimSpace(text), "$ ")
		if strings.HasPrefix(text, "runner ") {
			out = append(out, docCommandLine{text, line})
		}
	}
	fenced := false
	span := regexp.MustCompile("`([^`\n]+)`")
	for i, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			add(l, i+1)
			continue
		}
		for _, m := range span.FindAllStringSubmatch(l, -1) {
			add(m[1], i+1)
		}
	}
	return out
}

// checkCommandLine walks a command line's words down root's command tree
// and checks each flag it names against the command it reached. It stops
// at the end of the shell command (a pipe, a redirection, a comment, ...).
func checkCommandLine(root *cobra.Command, line string) error {
	c := root
	words := strings.Fields(line)[1:]
	for i, w := range words {
		if strings.ContainsAny(w[:1], "|;&>#<(") || w == "..." {
			return nil
		}
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			// cobra adds --help and --version when a command runs.
			if name != "" && name != "help" && name != "version" && c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
				return errUnknown("flag --"+name, c)
			}
			continue
		}
		if len(w) == 2 && w[0] == '-' {
			if c.Flags().ShorthandLookup(w[1:]) == nil && c.InheritedFlags().ShorthandLookup(w[1:]) == nil {
				return errUnknown("flag "+w, c)
			}
			continue
		}
		// The first word that is no flag and no subcommand is an argument:
		// a command reached only through its parent's words.
		if i != commandDepth(c, root) || !c.HasSubCommands() {
			continue
		}
		sub := subcommand(c, w)
		if sub == nil && regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) {
			return errUnknown("command "+w, c)
		}
		if sub != nil {
			c = sub
		}
	}
	return nil
}

// subcommand is c's subcommand named (or aliased) w, if any.
func subcommand(c *cobra.Command, w string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == w || s.HasAlias(w) {
			return s
		}
	}
	return nil
}

// commandDepth is how many words below root c is.
func commandDepth(c, root *cobra.Command) int {
	n := 0
	for ; c != root; c = c.Parent() {
		n++
	}
	return n
}

type unknownError string

func (e unknownError) Error() string { return string(e) }

func errUnknown(what string, c *cobra.Command) error {
	return unknownError("`" + c.CommandPath() + "` has no " + what)
}
