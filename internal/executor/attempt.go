package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Executor runs steps: it owns what every step of a job shares.
type Executor struct {
	JobID  string
	Emit   func(eventlog.Event)
	Mask   func(string) string // replaces secret values in command output; nil: none
	Env    []string            // base environment of every command: process env + workflow env
	Grace  time.Duration       // TERM -> KILL; 0 = proc.DefaultGrace
	Stdout io.Writer           // live command output
	Stderr io.Writer
	Seed   uint64 // the job's seed for retry jitter
	TmpDir string // where Retry-After files are made
	Agent  Agent  // the program claude: steps run; zero: DefaultAgentCommand

	// Secrets (NAME=VALUE) come after each step's env, which cannot
	// override them.
	Secrets []string

	// GitContext is set when the workflow reads ${workflow.commits},
	// ${step.files_changed} or another git-context variable: runner then
	// asks git around every step (Workflow.GitContext).
	GitContext bool

	breakers breakers
	gitBases gitBases
}

// Run is the context of one execution of a step: whose variables, which
// output and extra environment, for which map item.
type Run struct {
	Scope *Scope
	// Dir is where the steps run and what a relative working_dir is
	// resolved in (a job's or an item's git worktree); "" = this process's
	// directory.
	Dir string
	// Worktree names the git worktree Dir is in, for $WORKTREE: its
	// branch (the job's, or a map item's); "" when the run is not in one.
	Worktree string
	Env      []string // extra environment (map agents: RUNNER_ITEM_*)
	ItemID   string   // map agents: the item, named on every event and seeding retry jitter
	// Phase is the workflow phase the step is of (workflow.PhaseSetup...):
	// its events carry it, and it names an unnamed step ("setup step 1").
	Phase  string
	Stdout io.Writer // overrides the executor's live output when set
	Stderr io.Writer
	Slot   retryv2.Slot // map agents: given back while the step waits out a delay
	// Map agents: Waiting checkpoints a step (not a repeat) before it waits
	// out a retry delay; From is such a checkpoint from a process that
	// ended, whose retry loop the step continues.
	Waiting func(state.StepRecord) error
	From    *state.StepRecord
	// Attempt, when set, is called as each attempt of the step starts (not
	// those of its handlers' or do steps, which write in the step's
	// attempt): a job's step log starts the attempt's section.
	Attempt func(n int)

	// Parallel is the label of the parallel: block the step runs in,
	// which its events name; "" for the other steps.
	Parallel string
	// StreamLog is the file the raw stream-json of the run's claude:
	// steps' agents is appended to, masked (state.Layout's ItemStream or
	// StepStream); "" keeps none.
	StreamLog string

	commits *commitTracker // the step's git HEAD, with commit_required or auto_commit
	within  string         // a foreach's do steps: the foreach and the item, "fmt[2]"
}

func (r Run) stdout(x *Executor) io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return x.Stdout
}

func (r Run) stderr(x *Executor) io.Writer {
	if r.Stderr != nil {
		return r.Stderr
	}
	return x.Stderr
}

// emit sends an event, naming the run's item if it has one.
func (x *Executor) emit(r Run, e eventlog.Event) {
	if x.Emit == nil {
		return
	}
	if r.ItemID != "" {
		e = e.WithItem(r.ItemID)
	}
	if r.within != "" {
		e = e.Within(r.within)
	}
	x.Emit(e.WithPhase(r.Phase).InParallel(r.Parallel))
}

// label names step in r's events and errors (workflow.Step.Label); a
// foreach's do step, named under its loop ("fmt[2].step 1"), without its
// phase.
func (r Run) label(step *workflow.Step) string {
	if r.within != "" {
		return step.Label("")
	}
	return step.Label(r.Phase)
}

// commandResult is one finished command with its captured output.
type commandResult struct {
	retryv2.Outcome
	stdout, stderr         []byte               // full captures when asked for
	stdoutTail, stderrTail streamTail           // always: the last outputLimit bytes
	commits                []string             // new commits since the step started, oldest first; nil when not tracked
	outputs                map[string]string    // the files of the step's outputs, by name
	usage                  *eventlog.AgentUsage // what its agent spent, when the agent reported it; a step's: all its attempts
}

// runCommand expands and runs one command once.
func (x *Executor) runCommand(ctx context.Context, step *workflow.Step, cmd workflow.Command, r Run, attempt int, capture bool) commandResult {
	if cmd.Kind == workflow.ForeachCommand {
		return x.runForeach(ctx, step, r, attempt, capture)
	}
	if cmd.Kind == workflow.WriteFileCommand {
		return x.writeFile(step, cmd, r, attempt)
	}
	start := time.Now()
	spec, err := x.prepare(ctx, step, cmd, r, attempt)
	if err != nil {
		return commandResult{Outcome: retryv2.Outcome{Attempt: attempt, Kind: retryv2.KindSpawn, ExitCode: -1, Err: err, Duration: time.Since(start)}}
	}
	retryAfter := x.retryAfterFile()
	spec.Env = append(spec.Env, "RUNNER_RETRY_AFTER_FILE="+retryAfter)
	stdout, stderr := MaskOutput(r.stdout(x), x.Mask), MaskOutput(r.stderr(x), x.Mask)
	spec.Stdout, spec.Stderr = stdout, stderr
	var stream *claudeStream
	if cmd.Kind == workflow.ClaudeCommand && x.agent().Streams() {
		stream = &claudeStream{out: stdout, progress: func(u eventlog.AgentUsage) {
			x.emit(r, eventlog.AgentProgress(r.label(step), attempt, u))
		}}
		if r.StreamLog != "" {
			raw := attemptlog.Open(r.StreamLog) // made by the first line of a stream
			defer raw.Close()
			stream.raw = MaskOutput(raw, x.Mask)
		}
		spec.Stdout = stream
	}
	spec.Timeout, spec.Grace = step.Timeout, x.Grace
	spec.CaptureStdout, spec.CaptureStderr = capture, capture && step.CaptureStreams != workflow.StreamStdout
	spec.TailLimit = outputLimit
	res := proc.Run(ctx, spec)
	if stream != nil {
		stream.Close()
		flushOutput(stream.raw)
	}
	flushOutput(stdout, stderr)
	out := retryv2.Outcome{
		Attempt:  attempt,
		ExitCode: res.ExitCode,
		Signal:   res.Signal,
		TimedOut: res.Kind == proc.KindTimeout,
		Stdout:   x.mask(string(lastBytes(res.StdoutTail, proc.TailSize))),
		Stderr:   x.mask(string(lastBytes(res.StderrTail, proc.TailSize))),
		Duration: res.Duration,
		Err:      res.Err,
	}
	if res.Kind != proc.KindOK {
		out.Kind = string(res.Kind)
		out.RetryAfter = readRetryAfter(retryAfter)
	}
	if res.Kind == proc.KindSpawn && cmd.Kind == workflow.ClaudeCommand {
		out.Err = fmt.Errorf("%w (%s)", res.Err, x.agent().origin())
	}
	os.Remove(retryAfter)
	cr := commandResult{
		Outcome: out, stdout: res.Stdout, stderr: res.Stderr,
		stdoutTail: streamTail{res.StdoutTail, res.StdoutBytes}, stderrTail: streamTail{res.StderrTail, res.StderrBytes},
	}
	if stream != nil && stream.streamed() {
		x.readStream(stream, step, r, &cr, capture)
	}
	return cr
}

// readStream makes the result of an agent's stream-json session the
// command's: its answer is the command's stdout (${claude.output},
// captures), an answer that is an error fails it (kind agent_error, with
// Claude Code's subtype), a session that ended without one too, and what
// it spent is an agent_usage event: its result's figures, or for a
// session cut off before its result what its messages spent.
func (x *Executor) readStream(stream *claudeStream, step *workflow.Step, r Run, cr *commandResult, capture bool) {
	res := stream.result
	if res != nil || stream.soFar.Tokens() > 0 {
		u := stream.usage()
		cr.usage = &u
		defer x.emit(r, eventlog.AgentUsageOf(r.label(step), cr.Attempt, u))
	}
	if res == nil {
		if !cr.Failed() {
			cr.Kind, cr.ExitCode = retryv2.KindAgentError, -1
			cr.Err = errors.New("the agent's stream-json output ended without its result")
		}
		return
	}
	answer := []byte(res.Result)
	if capture {
		cr.stdout = answer
	}
	cr.stdoutTail = streamTail{lastBytes(answer, outputLimit), int64(len(answer))}
	cr.Stdout = x.mask(string(lastBytes(answer, proc.TailSize)))
	if res.IsError { // whatever its exit status says
		cr.Kind = retryv2.KindAgentError
		cr.Err = fmt.Errorf("the agent reported an error (%s)", cmp.Or(res.subtype, "is_error"))
	}
}

// mask replaces secret values in command output: the tails that failure
// messages, DLQ records and retry matchers are made of.
func (x *Executor) mask(s string) string {
	if x.Mask == nil {
		return s
	}
	return x.Mask(s)
}

// prepare expands a command, its environment and working directory into
// what proc runs: a shell command, or for a claude: command the agent
// program with the text as its last argument, which no shell reads, so
// values go into it as they are.
// Computed variables (${file:PATH}, ${cmd:COMMAND}) are worked out in
// the command's directory and environment.
func (x *Executor) prepare(ctx context.Context, step *workflow.Step, cmd workflow.Command, r Run, attempt int) (proc.Spec, error) {
	if cmd.Kind != workflow.ClaudeCommand {
		sc, err := stepScope(step, r.Scope)
		if err != nil {
			return proc.Spec{}, err
		}
		env, dir, err := x.stepEnv(step, r, attempt, nil)
		if err != nil {
			return proc.Spec{}, err
		}
		script, err := cmd.Text.Expand(sc.in(ctx, dir, env, x.mask).Lookup(), interp.Shell)
		if err != nil {
			return proc.Spec{}, fmt.Errorf("interpolation: %w", err)
		}
		return proc.Spec{Command: script, Env: env, Dir: dir}, nil
	}
	agent := x.agent()
	if agent.Err != nil {
		return proc.Spec{}, agent.Err
	}
	agentEnv, err := expandEnv(agent.Env, r.Scope.PlainLookup(), "agent.env")
	if err != nil {
		return proc.Spec{}, err
	}
	env, dir, err := x.stepEnv(step, r, attempt, agentEnv)
	if err != nil {
		return proc.Spec{}, err
	}
	text, err := cmd.Text.Expand(r.Scope.in(ctx, dir, env, x.mask).PlainLookup(), interp.Plain)
	if err != nil {
		return proc.Spec{}, fmt.Errorf("interpolation: %w", err)
	}
	return proc.Spec{Args: agent.args(text), Env: env, Dir: dir}, nil
}

// agent is the program claude: steps run; an Executor made without one
// runs the default.
func (x *Executor) agent() Agent {
	if len(x.Agent.Command) == 0 && x.Agent.Err == nil {
		return Agent{Command: DefaultAgentCommand, From: AgentFromDefault, Env: x.Agent.Env}
	}
	return x.Agent
}

// stepEnv expands a step's environment and working directory: the
// executor's environment, Prodigy's context variables (prodigyEnv), then
// extra (what the command kind adds), the step's env, the run's, and the
// RUNNER_* variables of the attempt.
func (x *Executor) stepEnv(step *workflow.Step, r Run, attempt int, extra []string) (env []string, dir string, err error) {
	plain := r.Scope.PlainLookup()
	stepVars, err := expandEnv(step.Env, plain, "env")
	if err != nil {
		return nil, "", err
	}
	env = make([]string, 0, len(x.Env)+len(extra)+len(stepVars)+len(x.Secrets)+len(r.Env)+7)
	base, secrets := x.Env, x.Secrets
	if step.ClearEnv {
		base, secrets = nil, nil // the step's own env only
	}
	env = append(env, base...)
	env = append(env, prodigyEnv(r)...)
	env = append(env, extra...)
	env = append(env, stepVars...)
	env = append(env, secrets...)
	env = append(env, r.Env...)
	env = append(env,
		"RUNNER_JOB_ID="+x.JobID,
		"RUNNER_STEP="+r.qualified(step.Key()),
		"RUNNER_ATTEMPT="+strconv.Itoa(attempt),
	)
	if step.WorkingDir != nil {
		if dir, err = step.WorkingDir.Expand(plain, interp.Plain); err != nil {
			return nil, "", fmt.Errorf("interpolation: working_dir: %w", err)
		}
	}
	if r.Dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir, dir)
	}
	return env, dir, nil
}

// prodigyEnv is what Prodigy puts in every step's environment
// (executor/context.rs): PRODIGY_AUTOMATION=true, PROJECT_ROOT (the
// directory the run's steps run in: the worktree when in one) and, in a
// worktree, WORKTREE (its name: the branch).
func prodigyEnv(r Run) []string {
	root := r.Dir
	if root == "" {
		root, _ = os.Getwd()
	}
	env := []string{"PRODIGY_AUTOMATION=true", "PROJECT_ROOT=" + root}
	if r.Worktree != "" {
		env = append(env, "WORKTREE="+r.Worktree)
	}
	return env
}

// stepScope is sc as a step's shell command reads it: with the step's own
// env values over the workflow's, so that $NAME in its text, which runner
// expands itself, is the value the command's environment holds.
func stepScope(step *workflow.Step, sc *Scope) (*Scope, error) {
	if len(step.Env) == 0 {
		return sc, nil
	}
	vars, err := expandEnv(step.Env, sc.PlainLookup(), "env")
	if err != nil {
		return nil, err
	}
	child := sc.Child()
	for _, kv := range vars {
		name, value, _ := strings.Cut(kv, "=")
		child.Set(name, value)
		child.SetIn("env", name, value)
	}
	return child, nil
}

// expandEnv expands env entries (what names them in errors) into
// NAME=VALUE strings.
func expandEnv(vars []workflow.EnvVar, lookup interp.Lookup, what string) ([]string, error) {
	out := make([]string, 0, len(vars))
	for _, e := range vars {
		v, err := e.Value.Expand(lookup, interp.Plain)
		if err != nil {
			return nil, fmt.Errorf("interpolation: %s %s: %w", what, e.Name, err)
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

var retryAfterSeq atomic.Uint64

// retryAfterFile names the file an attempt may write a delay to.
func (x *Executor) retryAfterFile() string {
	return filepath.Join(x.TmpDir, fmt.Sprintf("retry-after-%d-%d", os.Getpid(), retryAfterSeq.Add(1)))
}

// readRetryAfter reads a delay in seconds from a Retry-After file.
func readRetryAfter(path string) *time.Duration {
	data, err := workflow.ReadNamedFile(path)
	if err != nil {
		return nil
	}
	d, ok := retryv2.ParseRetryAfter(string(data), time.Now())
	if !ok {
		return nil
	}
	return &d
}
