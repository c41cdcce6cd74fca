package executor

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// feed writes data to a claudeStream in pieces of n bytes (cut anywhere,
// as pipes cut it) and closes it; it returns the stream and what it showed.
func feed(t *testing.T, data []byte, n int) (*claudeStream, string) {
	t.Helper()
	var out bytes.Buffer
	s := &claudeStream{out: &out}
	for len(data) > 0 {
		k := min(n, len(data))
		if _, err := s.Write(data[:k]); err != nil {
			t.Fatal(err)
		}
		data = data[k:]
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s, out.String()
}

func transcript(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "stream", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A recorded session of Claude Code's stream-json, written in pieces of
// any size: the terminal sees the assistant's text and one line per tool
// call, never JSON; the result, the session, the model and the usage are
// kept.
func TestClaudeStreamReadsASession(t *testing.T) {
	data := transcript(t, "success.jsonl")
	wantShown := "I'll look at the failing test first.\n" +
		"[tool Bash] go test ./parser/...\n" +
		"[tool Edit] /repo/parser/list.go\n" +
		"Fixed the nesting depth in parser/list.go; the tests pass.\n"
	wantUsage := eventlog.AgentUsage{InputTokens: 31, OutputTokens: 1411, CacheReadTokens: 118342, CacheWriteTokens: 6204,
		CostUSD: 0.1873, Turns: 7, APITime: 45102 * time.Millisecond,
		SessionID: "9f3c2a1e-5b7d-4e2a-9c1b-0a8d7e6f5c4b", Model: "claude-sonnet-4-5-20250929"}
	for _, n := range []int{1, 7, 100, len(data)} {
		s, shown := feed(t, data, n)
		if shown != wantShown {
			t.Errorf("pieces of %d: shown\n%s\nwant\n%s", n, shown, wantShown)
		}
		if !s.streamed() || s.result == nil || s.result.IsError || s.result.Result != "Fixed the nesting depth in parser/list.go; the tests pass." {
			t.Errorf("pieces of %d: streamed %v, result %+v", n, s.streamed(), s.result)
		}
		if u := s.usage(); u != wantUsage {
			t.Errorf("pieces of %d: usage %+v\nwant %+v", n, u, wantUsage)
		}
	}
}

// While the session runs, each message's usage (a message comes in an
// event per content block, its output tokens growing) adds to what the
// session has spent so far, priced at the model's list prices; progress
// is told each time that grows. The figures so far are the result's
// tokens but for the output of the last block, which no event carries.
func TestClaudeStreamReportsSpendSoFar(t *testing.T) {
	var out bytes.Buffer
	var told []eventlog.AgentUsage
	s := &claudeStream{out: &out, progress: func(u eventlog.AgentUsage) { told = append(told, u) }}
	if _, err := s.Write(transcript(t, "success.jsonl")); err != nil {
		t.Fatal(err)
	}
	if len(told) != 4 { // msg_01A twice, 01B, 01C
		t.Fatalf("told %d times, want 4: %+v", len(told), told)
	}
	if first := told[0]; first.OutputTokens != 9 || first.CacheReadTokens != 13000 || first.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("first figures %+v", first)
	}
	last := told[3]
	if last.InputTokens != 31 || last.CacheWriteTokens != 6204 || last.CacheReadTokens != 118342 || last.OutputTokens != 1402 {
		t.Errorf("last figures %+v", last)
	}
	// Sonnet: $3 and $15 per million input and output tokens, cache
	// writes at 1.25 times the input price, reads at 0.1 times.
	want := (31*3 + 6204*3.75 + 118342*0.3 + 1402*15) / 1e6
	if math.Abs(last.CostUSD-want) > 2e-6 {
		t.Errorf("cost so far $%v, want $%v", last.CostUSD, want)
	}
}

// A long session of tool calls (eleven messages, some in two events,
// an API retry between them): each message counts once, at its last
// usage, and when the last one came the figures so far are the result's
// tokens, and its cost at Sonnet's list prices the result's.
func TestClaudeStreamFollowsALongSession(t *testing.T) {
	data := transcript(t, "long-tool-use.jsonl")
	for _, n := range []int{3, 4096} {
		var told []eventlog.AgentUsage
		s := &claudeStream{out: io.Discard, progress: func(u eventlog.AgentUsage) { told = append(told, u) }}
		for rest := data; len(rest) > 0; rest = rest[min(n, len(rest)):] {
			if _, err := s.Write(rest[:min(n, len(rest))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if len(told) != 15 {
			t.Fatalf("pieces of %d: told %d times, want 15 (11 messages, 4 of them in two events)", n, len(told))
		}
		last, final := told[len(told)-1], s.usage()
		if last.Tokens() != final.Tokens() || last.OutputTokens != 2045 || math.Abs(last.CostUSD-final.CostUSD) > 1e-6 || final.Turns != 23 {
			t.Errorf("pieces of %d: last figures %+v, result %+v", n, last, final)
		}
	}
}

// A model the price list does not know is counted at the highest price:
// a running agent is not taken to cost less than it can.
func TestEstimateCost(t *testing.T) {
	u := streamUsage{InputTokens: 1e6, OutputTokens: 1e6, CacheCreationInputTokens: 1e6, CacheReadInputTokens: 1e6}
	for model, want := range map[string]float64{
		"claude-sonnet-4-5-20250929": 3 + 15 + 3.75 + 0.3,
		"claude-opus-4-1-20250805":   15 + 75 + 18.75 + 1.5,
		"claude-opus-4-5-20251101":   5 + 25 + 6.25 + 0.5,
		"claude-haiku-4-5-20251001":  1 + 5 + 1.25 + 0.1,
		"claude-next-1":              15 + 75 + 18.75 + 1.5,
	} {
		if got := estimateCost(model, u); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: $%v, want $%v", model, got, want)
		}
	}
}

// The result of a session that ended in an error is kept with its
// subtype: a rate limit (subtype success, is_error) and the turn limit
// (error_max_turns, no result text).
func TestClaudeStreamKeepsErrors(t *testing.T) {
	for name, want := range map[string]string{"rate-limit.jsonl": "success", "max-turns.jsonl": "error_max_turns"} {
		s, shown := feed(t, transcript(t, name), 64)
		if s.result == nil || !s.result.IsError || s.result.subtype != want {
			t.Errorf("%s: result %+v, want an error of subtype %s", name, s.result, want)
		}
		if strings.Contains(shown, `"session_id"`) {
			t.Errorf("%s: JSON shown:\n%s", name, shown)
		}
	}
}

// An agent program that prints text (the first line is not a stream-json
// event, even if it is JSON) passes through as it is, and is no stream.
func TestClaudeStreamPassesTextThrough(t *testing.T) {
	for _, text := range []string{
		"reply 1\nline two\n",
		"\n{\"type\":\"plan\",\"steps\":[1]}\n{\"type\":\"result\"}\nno newline at the end",
		"[1, 2]\n",
		"",
	} {
		for _, n := range []int{1, 5, 1000} {
			s, shown := feed(t, []byte(text), n)
			if shown != text || s.streamed() {
				t.Errorf("%q in pieces of %d: shown %q, streamed %v", text, n, shown, s.streamed())
			}
		}
	}
}

// runner adds the stream flags to Claude Code's command only, and not
// when the command chooses an output format itself.
func TestAgentStreams(t *testing.T) {
	for _, c := range []struct {
		command []string
		want    bool
	}{
		{DefaultAgentCommand, true},
		{[]string{"/usr/local/bin/claude", "--print", "--model", "opus"}, true},
		{[]string{"claude", "--print", "--output-format", "text"}, false},
		{[]string{"claude", "-p", "--output-format=json"}, false},
		{[]string{"other-agent", "--print"}, false},
		{[]string{"claude-wrapper"}, false},
	} {
		a := Agent{Command: c.command}
		if got := a.Streams(); got != c.want {
			t.Errorf("%v: Streams() = %v, want %v", c.command, got, c.want)
		}
		args := a.args("TEXT")
		if streams := slices.Contains(args, "stream-json"); streams != c.want || args[len(args)-1] != "TEXT" {
			t.Errorf("%v: args %q", c.command, args)
		}
	}
}

// fakeClaude makes a program named claude that prints file and exits
// with code, and an Executor that runs it for claude: steps.
func fakeClaude(t *testing.T, file string, code int, events *[]eventlog.Event) *Executor {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	script := "#!/bin/sh\ncat '" + file + "'\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Executor{Env: os.Environ(), TmpDir: t.TempDir(), Agent: Agent{Command: []string{bin, "--print"}, From: AgentFromWorkflow},
		Emit: func(e eventlog.Event) { *events = append(*events, e) }}
}

// A claude: step whose agent streams: its answer is ${claude.output} and
// the capture, the session's spend is an agent_usage event; an answer
// that is an error fails the step as agent_error, with the subtype and
// the answer in the message, which retry_on matchers read (rate_limit).
func TestClaudeStepReadsTheStream(t *testing.T) {
	abs := func(name string) string { p, _ := filepath.Abs(filepath.Join("testdata", "stream", name)); return p }
	wf, err := workflow.Parse("a.yml", []byte("- claude: /fix\n  capture_output: answer\n"))
	if err != nil {
		t.Fatal(err)
	}
	var events []eventlog.Event
	x := fakeClaude(t, abs("success.jsonl"), 0, &events)
	sc := NewScope(nil, nil)
	res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: sc, Stdout: &bytes.Buffer{}})
	if res.Status != StepSucceeded {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if v, _ := sc.PlainLookup()("answer"); v != "Fixed the nesting depth in parser/list.go; the tests pass." {
		t.Errorf("capture %q", v)
	}
	var usage *eventlog.Event
	for i, e := range events {
		if e.Type == eventlog.TypeAgentUsage {
			usage = &events[i]
		}
	}
	if usage == nil || usage.Fields["cost_usd"] != 0.1873 || usage.Fields["output_tokens"] != int64(1411) || usage.Fields["step"] != "step 1" {
		t.Errorf("agent_usage event %+v", usage)
	}

	events = nil
	x = fakeClaude(t, abs("rate-limit.jsonl"), 1, &events)
	res = x.RunStep(t.Context(), wf.Steps[0], Run{Scope: NewScope(nil, nil), Stdout: &bytes.Buffer{}})
	if res.Status != StepFailed || res.Outcome.Kind != retryv2.KindAgentError || !strings.Contains(res.Err.Error(), "the agent reported an error (success): API Error: 429") {
		t.Errorf("status %s kind %q err %v", res.Status, res.Outcome.Kind, res.Err)
	}
	if ok, _ := (retryv2.Matcher{Kind: retryv2.MatchRateLimit}).Match(res.Outcome); !ok {
		t.Errorf("the rate_limit matcher does not match %q", res.Outcome.Message())
	}

	// A stream cut short (the agent killed, its output lost) without an
	// exit status that says so.
	lines := bytes.SplitAfter(transcript(t, "success.jsonl"), []byte("\n"))
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, bytes.Join(lines[:len(lines)-2], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	events = nil
	x = fakeClaude(t, cut, 0, &events)
	res = x.RunStep(t.Context(), wf.Steps[0], Run{Scope: NewScope(nil, nil), Stdout: &bytes.Buffer{}})
	if res.Status != StepFailed || res.Outcome.Kind != retryv2.KindAgentError || !strings.Contains(res.Err.Error(), "ended without its result") {
		t.Errorf("a stream without its result: status %s kind %q err %v", res.Status, res.Outcome.Kind, res.Err)
	}
	// What it spent is what its messages did, as they came: an
	// agent_progress event each time that grew, then agent_usage with the
	// last figures.
	var types []eventlog.Type
	for _, e := range events {
		if e.Type == eventlog.TypeAgentProgress || e.Type == eventlog.TypeAgentUsage {
			types = append(types, e.Type)
		}
	}
	wantTypes := []eventlog.Type{eventlog.TypeAgentProgress, eventlog.TypeAgentProgress, eventlog.TypeAgentProgress, eventlog.TypeAgentProgress, eventlog.TypeAgentUsage}
	if !slices.Equal(types, wantTypes) || res.Usage == nil || res.Usage.OutputTokens != 1402 || res.Usage.CostUSD == 0 {
		t.Errorf("a stream without its result: events %v, usage %+v", types, res.Usage)
	}
}

// ${steps.ID.cost_usd} and ${steps.ID.tokens} are what the agents of all
// the step's attempts spent: a first session that ran out of turns and
// the second that answered.
func TestClaudeStepSpendSumsItsAttempts(t *testing.T) {
	abs := func(name string) string { p, _ := filepath.Abs(filepath.Join("testdata", "stream", name)); return p }
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nif [ -e '" + dir + "/ran' ]; then cat '" + abs("success.jsonl") + "'; exit 0; fi\n" +
		": > '" + dir + "/ran'\ncat '" + abs("max-turns.jsonl") + "'\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	x := &Executor{Env: os.Environ(), TmpDir: t.TempDir(), Agent: Agent{Command: []string{bin, "--print"}, From: AgentFromWorkflow}}
	wf, err := workflow.Parse("a.yml", []byte("- claude: /fix\n  id: fix\n  retry_config: {attempts: 2, initial_delay: 1ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc := NewScope(nil, nil)
	res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: sc, Stdout: &bytes.Buffer{}})
	if res.Status != StepSucceeded || res.Attempts != 2 {
		t.Fatalf("status %s after %d attempts: %v", res.Status, res.Attempts, res.Err)
	}
	tmpl, err := interp.Parse("${steps.fix.cost_usd} ${steps.fix.tokens}")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Expand(sc.Lookup(), interp.Plain); err != nil || got != "0.2184 151055" {
		t.Errorf("got %q, %v; want the cost and tokens of both attempts, 0.2184 151055", got, err)
	}
	if res.Usage == nil || res.Usage.Turns != 9 || res.Usage.Tokens() != 151055 {
		t.Errorf("the step's usage %+v", res.Usage)
	}
}
