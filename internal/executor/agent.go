package executor

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// AgentCommandVar is the environment variable that names the agent program
// when the workflow has no agent.command.
const AgentCommandVar = "RUNNER_AGENT_COMMAND"

// DefaultAgentCommand runs claude: steps when neither the workflow nor the
// environment names a program. The only flags runner adds to an agent
// command are Claude Code's stream flags (Streams): permission-skipping
// flags are the user's to write.
var DefaultAgentCommand = []string{"claude", "--print"}

// Where an agent command comes from.
const (
	AgentFromWorkflow = "agent.command"
	AgentFromEnv      = AgentCommandVar
	AgentFromDefault  = "default"
)

// Agent is the program claude: steps run, with the step's text added as
// its last argument.
type Agent struct {
	Command []string          // program and leading arguments
	From    string            // AgentFromWorkflow, AgentFromEnv or AgentFromDefault
	Env     []workflow.EnvVar // agent.env
	Err     error             // RUNNER_AGENT_COMMAND could not be read; claude: steps fail with it
}

// ResolveAgent chooses the agent command: the workflow's agent.command,
// else RUNNER_AGENT_COMMAND from environ (split into words as a shell
// would, without expanding anything), else DefaultAgentCommand.
func ResolveAgent(wf *workflow.Agent, environ []string) Agent {
	var a Agent
	if wf != nil {
		a.Env = wf.Env
		if len(wf.Command) > 0 {
			a.Command, a.From = wf.Command, AgentFromWorkflow
			return a
		}
	}
	if v := lookupEnv(environ, AgentCommandVar); strings.TrimSpace(v) != "" {
		a.Command, a.Err = splitWords(v)
		a.From = AgentFromEnv
		if a.Err != nil {
			a.Err = fmt.Errorf("%s: %w", AgentCommandVar, a.Err)
		}
		return a
	}
	a.Command, a.From = DefaultAgentCommand, AgentFromDefault
	return a
}

// streamFlags are what runner adds to Claude Code's command so that it
// reads the session as it goes (claudeStream): its events as JSON lines.
var streamFlags = []string{"--output-format", "stream-json", "--verbose"}

// Streams reports whether runner reads the agent's output as Claude
// Code's stream-json: the program is claude, and its command does not
// choose an output format of its own.
func (a Agent) Streams() bool {
	if len(a.Command) == 0 || filepath.Base(a.Command[0]) != "claude" {
		return false
	}
	for _, w := range a.Command[1:] {
		if w == "--output-format" || strings.HasPrefix(w, "--output-format=") {
			return false
		}
	}
	return true
}

// Argv is what runs before a step's text: the command, and the stream
// flags when it Streams.
func (a Agent) Argv() []string {
	if a.Streams() {
		return append(slices.Clip(a.Command), streamFlags...)
	}
	return a.Command
}

// args is the agent's argv for a step's text, which is one argument.
func (a Agent) args(text string) []string {
	return append(slices.Clip(a.Argv()), text)
}

// String shows the command as words a shell would read back.
func (a Agent) String() string {
	words := make([]string, len(a.Command))
	for i, w := range a.Command {
		words[i] = interp.ShellWord(w)
	}
	return strings.Join(words, " ")
}

// origin says where the command came from and how to choose another, for
// messages about an agent that cannot start.
func (a Agent) origin() string {
	switch a.From {
	case AgentFromWorkflow:
		return fmt.Sprintf("agent command %s, from the workflow's agent.command", a)
	case AgentFromEnv:
		return fmt.Sprintf("agent command %s, from %s; the workflow's agent.command would take precedence", a, AgentCommandVar)
	}
	return fmt.Sprintf("agent command %s, runner's default: install it, or name another program with agent.command in the workflow or %s", a, AgentCommandVar)
}

// lookupEnv returns the value of the last entry for name in environ.
func lookupEnv(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// splitWords splits s into words as sh splits a simple command, without
// expanding anything: blanks separate words; '...' keeps everything
// literally; "..." keeps everything but a backslash before $ ` " \ or a
// newline, which it removes; outside quotes a backslash keeps the next
// character (and removes a newline). $, ` and globs are plain characters.
func splitWords(s string) ([]string, error) {
	var (
		words []string
		word  strings.Builder
		in    bool // inside a word (possibly an empty quoted one)
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, word.String())
				word.Reset()
				in = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			in = true
		case c == '"':
			j, err := doubleQuoted(s, i+1, &word)
			if err != nil {
				return nil, err
			}
			i = j
			in = true
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("ends with a backslash")
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				in = true
			}
		default:
			word.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, word.String())
	}
	return words, nil
}

// doubleQuoted reads the inside of "..." starting at s[i] into word and
// returns the index of the closing quote.
func doubleQuoted(s string, i int, word *strings.Builder) (int, error) {
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
			}
		default:
			word.WriteByte(c)
		}
	}
	return 0, errors.New("unterminated double quote")
}
