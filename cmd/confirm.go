package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/runnerdev/runner/internal/workspace"
)

// console is where runner asks a person a question: the input it reads
// the answer from and whether a person is there to answer it.
type console struct {
	in io.Reader
	// interactive reports whether the input and the output runner asks
	// on are terminals.
	interactive func() bool
}

// processConsole asks on this process's stdin and on stderr.
func processConsole(stderr io.Writer) console {
	return console{in: os.Stdin, interactive: func() bool {
		f, ok := stderr.(*os.File)
		return ok && term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(f.Fd()))
	}}
}

// confirm writes question to out and reads one line of answer from in:
// "y" or "yes" (any case) is yes; anything else, or no line, is no.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}

// canAsk reports whether runner asks whether to merge the branch of a
// job that succeeded, whose work is at end: only on a terminal, and only
// with a branch to merge into (HEAD was not detached).
func (c console) canAsk(end workspace.End) bool {
	return end.Target != "" && c.interactive != nil && c.interactive()
}

// askMerge asks on out whether to merge the job's branch into the branch
// it started on, as Prodigy asks at the end of a run.
func (c console) askMerge(out io.Writer, end workspace.End) bool {
	return confirm(c.in, out, fmt.Sprintf("merge %s into %s? [y/N] ", end.Branch, end.Target))
}
