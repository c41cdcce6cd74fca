package workflow

import (
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow/interp"
)

// Mode selects the kind of workflow.
type Mode string

// Workflow modes.
const (
	Standard  Mode = "standard"
	MapReduce Mode = "mapreduce"
)

// Pos is a position in a workflow file (1-based).
type Pos struct {
	Line, Col int
}

// Workflow is a parsed and validated workflow file.
type Workflow struct {
	File    string // path as given
	Name    string
	Mode    Mode
	Env     []EnvVar
	Secrets []string // names of environment variables whose values are masked
	// EnvSecrets are the names secrets: lists without a value: the
	// environment gives them (on NATS, each worker's own).
	EnvSecrets []string
	Agent      *Agent // the top-level agent key; nil when absent

	Description string // a label for people (Prodigy's description:)

	// GitContext is set when a value reads a git-context variable
	// (${workflow.commits}, ${step.files_changed}...): only then does
	// runner ask git around every step.
	GitContext bool
	// ReadsResults is set when a value reads ${map.results} or
	// ${map.results_file}: only then does a MapReduce job write
	// results.json after its map.
	ReadsResults bool

	// Warnings are what the file does that has no effect or may not mean
	// what its author meant, in file order (runner validate and run print
	// them; --strict makes them errors).
	Warnings ParseErrors
	// Composed is the composed document of a workflow made with
	// Prodigy's composition (imports, extends, template, parameters):
	// the copy a job stores, which needs none of the files it came from.
	// nil for any other workflow.
	Composed []byte

	// The rest of the environment (parse_env.go): secrets written as
	// values or references, applied after each step's env; env_files;
	// profiles.
	SecretVars []Secret
	EnvFiles   []EnvFile
	Profiles   []Profile
	profilesAt Pos

	Steps []*Step // standard workflows

	// SetupTimeout bounds the whole setup phase (setup: {timeout}); 0 =
	// none. SetupTimeoutVar is its $VAR form, resolved when the job starts.
	SetupTimeout    time.Duration
	SetupTimeoutVar *VarDuration

	Setup       []*Step // MapReduce workflows
	Map         *MapPhase
	Reduce      []*Step
	ErrorPolicy errorpolicy.Policy
	ItemRetry   *retryv2.Policy // error_policy.retry_config, for on_item_failure: retry
	// Budget is the budget: key, what the job's agents may spend (the
	// job's and each item's); the zero Budget limits nothing.
	Budget errorpolicy.Budget
	// Merge is the merge: block, which replaces runner's own git merge of
	// the job branch into the user's branch; nil when absent.
	Merge *MergePhase
	// MergeBack (merge_back: true) asks for that merge whenever the job
	// succeeds, as runner run --merge does.
	MergeBack bool
	// Isolation is where a standard workflow's commands run: the
	// top-level isolation: key, or what runner decided for the job
	// (--in-place, outside a git work tree, a resumed job's record); ""
	// when neither says, which RunsInWorktree decides.
	Isolation Isolation
	// Distributed is the distributed: block, read only when the map's
	// items run on NATS workers (runner run --nats); nil when absent.
	Distributed *Distributed
}

// Distributed says how a MapReduce job's items go to NATS workers.
type Distributed struct {
	Queue         string // the worker pool; "" = default
	MaxDeliveries int    // deliveries of one attempt before it fails as kind lost; 0 = default
	Replicas      int    // of the NATS streams and bucket, 1 to MaxReplicas; 0 = default
}

// MergePhase is the merge: block (Prodigy's merge workflow): steps run in
// the job worktree, with ${merge.*}, to merge the job branch.
type MergePhase struct {
	Steps   []*Step
	Timeout time.Duration // the whole phase; 0 = none
}

// RunsInWorktree reports whether the job's phases run in a git worktree of
// their own, on the job branch runner/<job id>, which the end of the job
// may merge into the user's branch: a MapReduce workflow whose map has
// isolation: worktree; a standard workflow as its Isolation says, or
// when it says nothing, one that asks for a job branch (WantsJobBranch)
// or whose steps change the repository (a claude: step or
// commit_required anywhere, handlers included), as every Prodigy workflow
// runs in a worktree. A shell-only standard workflow runs in the
// checkout.
func (wf *Workflow) RunsInWorktree() bool {
	switch {
	case wf.Mode == MapReduce:
		return wf.Map != nil && wf.Map.Isolation == IsolationWorktree
	case wf.Isolation != "":
		return wf.Isolation == IsolationWorktree
	}
	return wf.WantsJobBranch() || defaultIsolation(wf.Steps) == IsolationWorktree
}

// WantsJobBranch reports whether the file itself asks for a job branch:
// a merge: block, merge_back: true, or a standard workflow's isolation:
// worktree. Such a workflow never falls back to running in the checkout.
func (wf *Workflow) WantsJobBranch() bool {
	return wf.Merge != nil || wf.MergeBack || wf.Mode == Standard && wf.Isolation == IsolationWorktree
}

// EnvVar is one environment entry; Value may hold placeholders. In the
// workflow env, From may make the value at job start instead (Value nil).
type EnvVar struct {
	Name  string
	Value *interp.Template
	From  *EnvSource
	Pos   Pos // where its name is
}

// Agent is the top-level agent key: the program claude: steps run.
type Agent struct {
	Command []string // program and leading arguments; nil: RUNNER_AGENT_COMMAND or the default
	Env     []EnvVar // added to the environment of claude: steps
}

// CommandKind says how a command's text is run.
type CommandKind string

// Command kinds.
const (
	ShellCommand  CommandKind = "shell"  // sh -c TEXT; values are escaped for the shell
	ClaudeCommand CommandKind = "claude" // the agent program with TEXT as its last argument; values go in as they are
	// ForeachCommand runs Step.Foreach; TEXT is the shell command that
	// prints its items, or empty when the file lists them.
	ForeachCommand CommandKind = "foreach"
)

// Command is what a step or a failure handler runs.
type Command struct {
	Kind  CommandKind
	Text  *interp.Template // write_file: the path
	Write *WriteFile       // write_file only
}

// source is the command as the file writes it, for events and labels.
func (c Command) source() string {
	if c.Kind == WriteFileCommand {
		return "write_file " + c.Text.String()
	}
	return c.Text.String()
}

// Refs returns the paths the command's placeholders read.
func (c Command) Refs() []string {
	if c.Write != nil && c.Write.Content != nil {
		return append(c.Text.Refs(), c.Write.Content.Refs()...)
	}
	return c.Text.Refs()
}

// Step is one command of a workflow.
type Step struct {
	Pos   Pos
	Index int // 0-based position in its list

	Command    Command
	Foreach    *Foreach  // a foreach: step's loop; nil for the other steps
	Parallel   *Parallel // the parallel: block the step runs in; nil for the other steps
	Name       string
	ID         string
	Timeout    time.Duration // one attempt; 0 = none
	Env        []EnvVar
	ClearEnv   bool // clear_env: the step's commands get only its env (and RUNNER_*)
	WorkingDir *interp.Template

	TimeoutVar *VarDuration // timeout: $VAR, resolved into Timeout when the job starts

	Capture        string // "" = no capture; "shell.output" or "claude.output" for capture_output: true; otherwise the variable name
	CaptureFormat  CaptureFormat
	CaptureStreams CaptureStreams
	Outputs        []StepOutput // Prodigy's outputs: files the step makes, read as ${ID.NAME}
	// OutputFile (Prodigy's output_file) is a file that receives the
	// command's stdout too, written again by each attempt; nil: none.
	OutputFile *interp.Template

	When *Expr

	Retry     []retryv2.Policy // nil: run once; one element for the single form
	Retryable bool             // false turns retries off whatever Retry says
	Breaker   *breaker.Config
	Repeat    *Repeat
	OnFailure Failure
	// OnSuccess runs after the step succeeded; OnExitCode[CODE] after the
	// step's command exited with CODE. Their steps run in the step's scope
	// and do not change its result (a failing one stops the workflow).
	OnSuccess  []*Step
	OnExitCode map[int][]*Step
	// Path names a handler's step in events ("test.on_success",
	// "bench.on_exit_code.101[2]"); "" for a step of a phase.
	Path string

	// CommitRequired fails a step that made no git commit; AutoCommit
	// commits what a step that made none left in the work tree, with
	// CommitMessage (nil: runner's own message).
	CommitRequired bool
	AutoCommit     bool
	CommitMessage  *interp.Template

	Validate *Validation // nil: the step is done when its command succeeded
	// Output is the file the step declares it writes (Prodigy's output:),
	// relative to the step's directory: the step fails when its command
	// succeeded without writing it. nil: no file is declared.
	Output *interp.Template

	texts []string // every value the file writes in the step, for Reads
}

// TracksCommits reports whether runner watches the step's git HEAD.
func (s *Step) TracksCommits() bool { return s.CommitRequired || s.AutoCommit || len(s.Outputs) > 0 }

// StepOutput is one of Prodigy's outputs of a step: after the step
// succeeds, ${ID.Name} is the file matching Pattern that it created or
// changed.
type StepOutput struct {
	Name    string
	Pattern string // a path.Match glob, matched against the file's base name (or its path when it holds a /)
}

// Key identifies the step in what runner stores and in RUNNER_STEP: its
// id, its name, its handler path, or "step-N" (1-based position). Journal
// records and circuit breakers of jobs written by earlier runners hold it,
// so it does not change; people and events see Label.
func (s *Step) Key() string {
	switch {
	case s.ID != "":
		return s.ID
	case s.Name != "":
		return s.Name
	case s.Path != "":
		return s.Path
	}
	return "step-" + strconv.Itoa(s.Index+1)
}

// Phases of a workflow, as the journal, events and labels name them.
const (
	PhaseCommands = "commands" // a standard workflow's steps
	PhaseSetup    = "setup"
	PhaseMap      = "map" // the agent_template steps of a map item
	PhaseReduce   = "reduce"
	PhaseMerge    = "merge" // the merge: block
)

// Phases lists the phases in the order a job runs them.
var Phases = []string{PhaseCommands, PhaseSetup, PhaseMap, PhaseReduce, PhaseMerge}

// StepsOf returns the steps of phase (one of Phases); nil when the
// workflow has none.
func (wf *Workflow) StepsOf(phase string) []*Step {
	switch phase {
	case PhaseCommands:
		return wf.Steps
	case PhaseSetup:
		return wf.Setup
	case PhaseMap:
		if wf.Map != nil {
			return wf.Map.Template
		}
	case PhaseReduce:
		return wf.Reduce
	case PhaseMerge:
		if wf.Merge != nil {
			return wf.Merge.Steps
		}
	}
	return nil
}

// Label is how the step is shown to people and named in events, the
// report, JUnit, runner logs and --dry-run, for a step of phase: its
// name, else its id, else its handler path ("test.on_success"), else
// "PHASE step N" (N its 1-based position), or "step N" for a standard
// workflow's steps (phase PhaseCommands or "").
func (s *Step) Label(phase string) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.ID != "":
		return s.ID
	case s.Path != "":
		return s.Path
	}
	n := "step " + strconv.Itoa(s.Index+1)
	if phase == "" || phase == PhaseCommands {
		return n
	}
	return phase + " " + n
}

// CommandLine is the first line of the step's command, at most 60
// characters: what a message says of an unnamed step beside its label.
func (s *Step) CommandLine() string {
	cmd, _, _ := strings.Cut(strings.TrimSpace(s.CommandText()), "\n")
	if len(cmd) > 60 {
		cmd = cmd[:57] + "..."
	}
	return cmd
}

// CaptureFormat says how captured output is turned into a value.
type CaptureFormat string

// Capture formats.
const (
	CaptureString  CaptureFormat = "string"
	CaptureJSON    CaptureFormat = "json"
	CaptureLines   CaptureFormat = "lines"
	CaptureNumber  CaptureFormat = "number"
	CaptureBoolean CaptureFormat = "boolean"
)

// CaptureStreams says which output streams a capture reads.
type CaptureStreams string

// Capture streams.
const (
	StreamStdout CaptureStreams = "stdout"
	StreamStderr CaptureStreams = "stderr"
	StreamBoth   CaptureStreams = "both"
	StreamNone   CaptureStreams = "none" // Prodigy's {stdout: false, stderr: false}: the value is "" (a boolean: the exit status)
)

// Expr is a compiled expression with its source text.
type Expr struct {
	Source  string
	Program *vm.Program
}

// Repeat re-runs a successful step until a condition holds.
type Repeat struct {
	Until       *Expr
	Interval    time.Duration
	Backoff     retryv2.Backoff
	MaxAttempts int
	Timeout     time.Duration
}

// FailureAction is what happens after a step finally failed.
type FailureAction string

// Failure actions.
const (
	FailStop     FailureAction = "stop"     // the workflow fails
	FailContinue FailureAction = "continue" // recorded; the workflow goes on
	FailFallback FailureAction = "fallback" // a command whose result becomes the step's result
	FailHandler  FailureAction = "handler"  // commands run; the workflow goes on unless FailWorkflow
)

// Failure is a step's failure handling, from retry_config.on_failure or the
// step-level on_failure.
type Failure struct {
	Action       FailureAction
	Commands     []Command // fallback (one) or handler commands
	FailWorkflow bool      // handler: fail the workflow after the handlers ran
	// MaxAttempts (handler) makes a fix-and-retry loop: the step runs at
	// most MaxAttempts times in all, the handlers after each failed run but
	// the last; 0 runs the handlers once, without a re-run.
	MaxAttempts int
	// CommitRequired (handler): each run of the handlers must make a git
	// commit, or it fails.
	CommitRequired bool
	// OnSuccess (handler) runs after each successful run of the handlers,
	// as part of them (Prodigy's check that a fix worked).
	OnSuccess []*Step
}

// MapPhase is the map section of a MapReduce workflow.
type MapPhase struct {
	Pos          Pos
	Input        *interp.Template
	InputPos     Pos // where map.input's value is
	JSONPath     string
	Filter       *Expr
	SortBy       []SortKey
	Distinct     string
	Offset       int
	MaxItems     int // 0: no limit
	ItemID       *interp.Template
	MaxParallel  string // a number or "$VAR", resolved when the job starts
	AgentTimeout time.Duration
	// AgentTimeoutVar is agent_timeout: $VAR, resolved into AgentTimeout
	// when the job starts.
	AgentTimeoutVar *VarDuration
	Template        []*Step
	// Isolation is where items run: IsolationWorktree (a git worktree
	// each) or IsolationNone (the directory runner runs in), as the file
	// says or, when it says nothing, by defaultIsolation.
	Isolation    Isolation
	IsolationSet bool // the file sets map.isolation
	NoMerge      bool // map.merge: none: items' branches are kept, not merged
}

// Isolation is map.isolation.
type Isolation string

// The values of map.isolation.
const (
	IsolationNone     Isolation = "none"
	IsolationWorktree Isolation = "worktree"
)

// defaultIsolation is map.isolation when the file gives none: worktree
// when an item's steps change a repository (a claude: step, or
// commit_required, in a step or one of its handlers), none otherwise.
func defaultIsolation(template []*Step) Isolation {
	for s := range AllSteps(template) {
		if s.changesRepository() {
			return IsolationWorktree
		}
	}
	return IsolationNone
}

// SortKey is one key of sort_by.
type SortKey struct {
	Field      string
	Desc       bool
	NullsFirst bool
}
