package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// map.input is a file or a shell command. A word that names no file used
// to run as a command (`exit status 127: items.json: not found`), and a
// FIFO as a command too: a text that looks like a file name, and a path
// that names something other than a regular file, are errors instead.

// fileLike is one word without shell syntax that ends in an extension
// (items.json) or holds a slash (data/items).
var fileLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^\s|&;<>()$` + "`" + `'"*?\\]+$`) })

var extension = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.[A-Za-z0-9]+$`) })

// looksLikeFile reports whether a map input's text names a file rather
// than a command: one word without shell syntax, with an extension or a
// slash.
func looksLikeFile(text string) bool {
	return fileLike().MatchString(text) && (extension().MatchString(text) || strings.Contains(text, "/"))
}

// FindInput looks for the map input file text names, relative to each of
// dirs in turn ("" is this process's directory; an absolute text is
// itself). It returns the path of the regular file to read, or "" and no
// error when text is a command to run; an error when text names something
// that is not a regular file (a FIFO, a device; a directory when text
// looks like a file), or looks like a file and names nothing.
func FindInput(text string, dirs []string) (string, error) {
	if text == "" {
		return "", nil
	}
	var looked []string
	for _, dir := range dirs {
		path := text
		if dir != "" && !filepath.IsAbs(text) {
			path = filepath.Join(dir, text)
		}
		fi, err := os.Stat(path)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return path, nil
		case err == nil && (!fi.IsDir() || looksLikeFile(text)):
			return "", fmt.Errorf("%s is not a regular file (%s): map.input is a file to read or a command to run", path, fileKind(fi.Mode()))
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		looked = append(looked, path)
	}
	if !looksLikeFile(text) {
		return "", nil
	}
	where := ""
	if len(looked) > 1 || looked[0] != text {
		where = " (looked for " + strings.Join(looked, " and ") + ")"
	}
	return "", fmt.Errorf("no such file %s%s: give the file map.input names, or a command that prints the items", text, where)
}

// CheckInputFile checks, before a job starts, the file that a MapReduce
// workflow's literal map.input names, relative to this process's
// directory (as the run looks for it when the job has no worktree). A
// workflow with setup steps is not checked for a missing file, as setup
// may write it; a file that exists and is not a regular one is an error
// either way.
func CheckInputFile(wf *Workflow) error {
	m := wf.Map
	if wf.Mode != MapReduce || m == nil || m.Input == nil || len(m.Input.Refs()) > 0 {
		return nil
	}
	text := m.Input.String()
	_, err := FindInput(text, []string{""})
	if err == nil || len(wf.Setup) > 0 && errors.Is(pathError(text), fs.ErrNotExist) {
		return nil
	}
	return ParseErrors{{File: wf.File, Pos: m.InputPos, Msg: "map.input: " + err.Error()}}
}

// pathError is what os.Stat says of path.
func pathError(path string) error {
	_, err := os.Stat(path)
	return err
}
