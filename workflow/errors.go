package workflow

import (
	"fmt"
	"strings"
)

// ParseError is one problem in a workflow file, at a position.
type ParseError struct {
	File string
	Pos
	Msg string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
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

// maxErrors bounds how many problems one file reports.
const maxErrors = 50
