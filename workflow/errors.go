package workflow

import (
	"fmt"
	"strings"
)

// ParseError is one problem in a workflow file, at a position. A warning
// is one that does not stop the file from running (a key Prodigy ignores,
// an older form of a step): Workflow.Warnings holds those.
type ParseError struct {
	File string
	Pos
	Msg     string
	Warning bool
}

func (e *ParseError) Error() string {
	msg := e.Msg
	if e.Warning {
		msg = "warning: " + msg
	}
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, msg)
}

// ParseErrors are all the problems found in one file, in file order.
type ParseErrors []*ParseError

func (es ParseErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Strict is es made errors: runner validate --strict refuses a file that
// has warnings.
func (es ParseErrors) Strict() ParseErrors {
	out := make(ParseErrors, len(es))
	for i, e := range es {
		c := *e
		c.Warning = false
		out[i] = &c
	}
	return out
}

// maxErrors bounds how many problems one file reports.
const maxErrors = 50
