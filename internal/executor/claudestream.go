package executor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/printable"
)

// claudeStream reads Claude Code's `--output-format stream-json` output
// as it is written, one JSON event a line: it shows the agent's text and
// its tool calls on out, readable, and keeps the session, the model and
// the final result event; raw keeps its lines as they came. An agent
// program whose first line is not a stream-json event prints text: that
// output passes to out as it is, and the step's output is that text, as
// before runner read streams.
type claudeStream struct {
	out io.Writer
	raw io.Writer // the stream's lines as they came; nil: kept nowhere

	mu      sync.Mutex
	line    []byte // the line being written
	decided bool   // the first line was read
	plain   bool   // the output is not stream-json
	session string
	model   string
	result  *streamResult

	// messages are the usage of the session's messages so far, by id (a
	// message comes in an event per content block, each with its usage
	// so far), and soFar their sum (spentSoFar); progress, when set, is
	// told soFar each time its tokens grow.
	messages map[string]messageUsage
	soFar    eventlog.AgentUsage
	progress func(eventlog.AgentUsage)
}

// messageUsage is what one message of the session spent, and its model.
type messageUsage struct {
	model string
	usage streamUsage
}

// streamEvent is the part of a stream-json event runner reads: system
// (subtype init), assistant and user messages, and the result.
type streamEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   *struct {
		ID      string       `json:"id"`
		Model   string       `json:"model"`
		Usage   *streamUsage `json:"usage"`
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`
	streamResult
}

// streamResult is the final event of a stream: the agent's answer, whether
// it is an error, and what the session spent.
type streamResult struct {
	Result        string       `json:"result"`
	IsError       bool         `json:"is_error"`
	NumTurns      int          `json:"num_turns"`
	DurationAPIMS int64        `json:"duration_api_ms"`
	TotalCostUSD  float64      `json:"total_cost_usd"`
	Usage         *streamUsage `json:"usage"`
	subtype       string
}

// streamUsage is the tokens of a session, as Claude Code counts them.
type streamUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// streamTypes are the event types of Claude Code's stream-json output: a
// first line of one of them makes the output a stream.
var streamTypes = map[string]bool{"system": true, "assistant": true, "user": true, "result": true, "stream_event": true}

func (s *claudeStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain {
		return s.out.Write(p)
	}
	s.line = append(s.line, p...)
	for {
		i := bytes.IndexByte(s.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := s.line[:i+1]
		if err := s.read(line); err != nil {
			return len(p), err
		}
		if s.plain { // the rest goes out as it came
			_, err := s.out.Write(s.line[i+1:])
			s.line = nil
			return len(p), err
		}
		s.line = s.line[i+1:]
	}
}

// Close reads a last line without its newline.
func (s *claudeStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain || len(s.line) == 0 {
		return nil
	}
	line := s.line
	s.line = nil
	return s.read(line)
}

// read takes one line of the output: the first decides whether the output
// is a stream; a line of a stream that is not an event (a blank one, a
// warning) is shown as it is.
func (s *claudeStream) read(line []byte) error {
	var e streamEvent
	err := json.Unmarshal(line, &e)
	if !s.decided {
		if len(bytes.TrimSpace(line)) == 0 {
			_, err := s.out.Write(line)
			return err
		}
		s.decided = true
		if err != nil || !streamTypes[e.Type] {
			s.plain = true
			_, err := s.out.Write(line)
			return err
		}
	}
	if s.raw != nil {
		s.raw.Write(line) // a log that cannot be written does not fail the step
	}
	if err != nil {
		_, err := s.out.Write(line)
		return err
	}
	return s.show(e)
}

// show shows an event on out: the assistant's text and tool calls (a
// line each: "[tool NAME] WHAT"); it notes the session, the model and the
// result.
func (s *claudeStream) show(e streamEvent) error {
	s.session = cmp.Or(e.SessionID, s.session)
	switch e.Type {
	case "system":
		s.model = cmp.Or(e.Model, s.model)
	case "assistant":
		if e.Message == nil {
			return nil
		}
		s.model = cmp.Or(e.Message.Model, s.model)
		if u := e.Message.Usage; u != nil {
			s.spend(cmp.Or(e.Message.ID, fmt.Sprint(len(s.messages))), messageUsage{s.model, *u})
		}
		var b strings.Builder
		for _, c := range e.Message.Content {
			switch c.Type {
			case "text":
				b.WriteString(c.Text)
				if !strings.HasSuffix(c.Text, "\n") {
					b.WriteByte('\n')
				}
			case "tool_use":
				fmt.Fprintf(&b, "[tool %s] %s\n", c.Name, toolSummary(c.Input))
			}
		}
		_, err := io.WriteString(s.out, b.String())
		return err
	case "result":
		r := e.streamResult
		r.subtype = e.Subtype
		s.result = &r
	}
	return nil
}

// spend notes a message's usage so far, and tells progress what the
// session has spent when its tokens grew.
func (s *claudeStream) spend(id string, m messageUsage) {
	if s.messages == nil {
		s.messages = make(map[string]messageUsage)
	}
	s.messages[id] = m
	before := s.soFar.Tokens()
	s.soFar = s.spentSoFar()
	if s.progress != nil && s.soFar.Tokens() > before {
		s.progress(s.soFar)
	}
}

// spentSoFar is what the session's messages spent so far: their tokens,
// and their cost at list prices (estimateCost).
func (s *claudeStream) spentSoFar() eventlog.AgentUsage {
	u := eventlog.AgentUsage{SessionID: s.session, Model: s.model}
	for _, m := range s.messages {
		u.InputTokens += m.usage.InputTokens
		u.OutputTokens += m.usage.OutputTokens
		u.CacheReadTokens += m.usage.CacheReadInputTokens
		u.CacheWriteTokens += m.usage.CacheCreationInputTokens
		u.CostUSD += estimateCost(m.model, m.usage)
	}
	u.CostUSD = math.Round(u.CostUSD*1e6) / 1e6 // to the millionth, as Add keeps it
	return u
}

// toolSummary is what a tool call works on, in one short line: the
// input's command, file, pattern, URL or description, else its JSON.
func toolSummary(input json.RawMessage) string {
	var fields map[string]any
	if json.Unmarshal(input, &fields) == nil {
		for _, k := range []string{"command", "file_path", "path", "pattern", "url", "description", "prompt"} {
			if v, ok := fields[k].(string); ok && v != "" {
				return printable.FirstLine(v, 120)
			}
		}
	}
	return printable.FirstLine(string(input), 120)
}

// streamed reports whether the output was Claude Code's stream (with or
// without its result event), not text.
func (s *claudeStream) streamed() bool { return !s.plain && s.decided }

// usage is what the session spent, as an agent_usage event's fields:
// its result's figures; a session without its result (the agent cut off)
// spent what its messages did (soFar).
func (s *claudeStream) usage() eventlog.AgentUsage {
	r := s.result
	if r == nil {
		return s.soFar
	}
	u := eventlog.AgentUsage{SessionID: s.session, Model: s.model,
		CostUSD: r.TotalCostUSD, Turns: r.NumTurns, APITime: time.Duration(r.DurationAPIMS) * time.Millisecond}
	if r.Usage != nil {
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		u.CacheReadTokens, u.CacheWriteTokens = r.Usage.CacheReadInputTokens, r.Usage.CacheCreationInputTokens
	}
	return u
}
