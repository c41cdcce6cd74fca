// Package job is the job runtime: a job started, resumed or attached by this
// process, with its state, event log, journal, lock and secrets, and the
// phases of steps it runs.
package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// Job is a job being run (started or resumed) by this process: its durable
// state, event log, journal, variables and executor.
type Job struct {
	st       *state.Job // its Meta is guarded by mu
	id       string
	wf       *workflow.Workflow
	scope    *executor.Scope // the job's variables; changed only between phases
	exec     *executor.Executor
	out      [2]io.Writer // the steps' output as given (Options.Stdout, Stderr), not masked
	tag      bool         // Options.Tag
	seed     uint64
	resumed  bool
	dir      string // where phases run; "" = this process's directory
	worktree string // the name (branch) of the git worktree dir is in; "" = none
	log      *eventlog.Log
	journal  *state.Journal
	done     map[string]map[int]state.StepRecord
	listener func(eventlog.Event)
	started  time.Time
	secrets  *jobenv.Secrets
	exitCode func(error) int // Options.ExitCode

	// spend orders the changes to what agents spent (the metadata's
	// Spend, running) with Spent, which reads both: an agent that ends
	// moves from one to the other at once.
	spend   sync.Mutex
	running eventlog.Running // what its agents still running have spent so far

	mu     sync.Mutex // guards st.Meta and logErr
	logErr error      // the first event log (or spend) write error
}

// Options configure starting or resuming a job.
type Options struct {
	// Context ends what opening the job runs (its env commands): the
	// caller's, so that an interrupt ends them; nil: only their timeout
	// does.
	Context context.Context
	Store   state.Store
	JobID   string            // run only; "" = generated
	Vars    map[string]string // --set; resume: the job's secrets and variables no finished step used; attach: only its secrets
	Profile string            // run only: the workflow profile to apply; "" = none
	Seed    *uint64           // run only; nil = random
	Stdout  io.Writer         // live command output
	Stderr  io.Writer
	// Tag (run --tag) tags each line a step prints on Stdout and Stderr
	// with the step's label, as a parallel: block's steps' lines are.
	Tag      bool
	Listener func(eventlog.Event) // sees every event as written (for the terminal)
	Now      func() time.Time

	// ItemBranches is recorded in a started job's metadata (run only):
	// the prefix of its items' git branches, "" when they have none.
	ItemBranches string
	// TargetBranch (run only) is the branch checked out where a job that
	// runs in git worktrees starts, which its job branch merges into; it
	// is in the job's metadata from its first write, so that no crash
	// leaves a job without it.
	TargetBranch string
	// ExitCode maps how the job ended (nil, ItemsInDLQ) to its exit code
	// when settling its DLQ changes that (UpdateItemCounts); nil leaves
	// the exit code as Finish recorded it.
	ExitCode func(error) int
	// Completed (resume only) resumes a job that completed too: the
	// final merge of its job branch, which was not made, is still to do.
	Completed bool
	// BudgetUSD (run and resume) is the job's budget in USD given on the
	// command line (--budget-usd), recorded in its metadata over the
	// workflow's budget.max_cost_usd; 0: none given (a resume keeps the
	// one recorded).
	BudgetUSD float64
	// Replace (resume and Attach) is a workflow file to run the rest of the job
	// with, in place of its stored copy; nil: the stored copy.
	Replace *Replacement
}

// Start creates a job for wf (whose file content is source) and records
// job_started.
func Start(wf *workflow.Workflow, source []byte, opts Options) (*Job, error) {
	now := nowFunc(opts.Now)
	seed := rand.Uint64()
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	id := opts.JobID
	if id == "" {
		id = state.NewID(wf.Name, now())
	}
	env, err := jobenv.Resolve(opts.context(), wf, jobenv.Spec{Set: opts.Vars, Profile: opts.Profile}, os.Environ())
	if err != nil {
		return nil, err
	}
	// A duration given as $VAR that is not one fails before the job exists.
	if err := wf.ResolveDurations(executor.NewScope(env.Vars(), os.Environ()).PlainLookup()); err != nil {
		return nil, err
	}
	sum := fileSum(source) // of the file as read: resume compares the file with it
	vars, secrets, source := jobenv.Withhold(wf, opts.Vars, copyOf(wf, source), env, opts.Profile)
	st, err := opts.Store.Create(state.Meta{
		ID: id, Workflow: wf.Name, File: wf.File, FilePath: absPath(wf.File), FileSum: sum, Mode: string(wf.Mode),
		Status: state.Running, Seed: seed, Vars: vars, Secrets: secrets, Started: now(), RunStarted: now(), PID: os.Getpid(),
		Steps: len(wf.Steps), Profile: opts.Profile, EnvCache: env.Cached(),
		ItemBranches: opts.ItemBranches, TargetBranch: opts.TargetBranch, Isolation: string(wf.Isolation),
		BudgetUSD: opts.BudgetUSD,
	}, source)
	if err != nil {
		return nil, err
	}
	j, err := open(st, wf, opts, env) // Create took the lock
	if err != nil {
		return nil, err
	}
	j.emit(eventlog.JobStarted(seed, wf.Name, wf.File, string(wf.Mode), os.Getpid()))
	return j, nil
}

// ErrCompleted is returned when resuming a job that completed.
var ErrCompleted = errors.New("already completed")

// completedError is resume's refusal of a completed job. One that ended
// with items in the DLQ says how many and the command that runs them
// again (Prodigy's resume would; runner keeps them behind dlq retry).
func completedError(id string, items *state.ItemCounts) error {
	if items == nil || items.DLQ == 0 {
		return fmt.Errorf("job %s: %w; nothing to resume", id, ErrCompleted)
	}
	held := "1 item"
	if items.DLQ > 1 {
		held = fmt.Sprintf("%d items", items.DLQ)
	}
	return fmt.Errorf("job %s: %w with %s in the DLQ, which resume does not run again; to run them again: runner dlq retry %s", id, ErrCompleted, held, id)
}

// Resume reopens a stopped, failed or interrupted job from its stored
// workflow copy, or from opts.Replace when that fits what the job has
// done (which then becomes its copy), and records job_resumed (and
// job_changed when resume changed its workflow or variables).
func Resume(id string, opts Options) (*Job, error) {
	st, err := opts.Store.Open(id)
	if err != nil {
		return nil, err
	}
	if st.Meta.Status == state.Completed && !opts.Completed {
		return nil, completedError(id, st.Meta.Items)
	}
	j, changed, err := reopenPlanned(st, opts)
	if err != nil {
		return nil, err
	}
	if j.done, err = j.readJournal(); err != nil {
		j.close()
		return nil, err
	}
	j.resumed = true
	if st.Meta.Status == state.Running { // its process died: the run recorded no end
		st.Meta.RanMS += killedRun(st.Meta, st.Layout().Events).Milliseconds()
	}
	st.Meta.RunStarted = nowFunc(opts.Now)()
	st.Meta.Status, st.Meta.PID, st.Meta.Error = state.Running, os.Getpid(), ""
	st.Meta.Finished = time.Time{}
	st.Meta.ResumedCount++
	if opts.BudgetUSD > 0 && opts.BudgetUSD != st.Meta.BudgetUSD {
		st.Meta.BudgetUSD = opts.BudgetUSD
		if changed == nil {
			e := eventlog.JobChanged("", "", nil)
			changed = &e
		}
		*changed = changed.WithBudget(opts.BudgetUSD)
	}
	if err := st.Save(); err != nil {
		j.close()
		return nil, err
	}
	j.emit(eventlog.JobResumed(os.Getpid(), st.Meta.ResumedCount))
	if changed != nil {
		j.emit(*changed)
	}
	return j, nil
}

// Attach opens a job that is not running to run more of its work from
// another process (`runner dlq retry`): its lock is shared with other
// attached processes and excludes a run or resume; its status is left
// alone; the variables its setup defined are restored. Close releases it.
// With opts.Replace (dlq retry --workflow) the job goes on with that file
// when it fits what the job has done, by resume's rules, even once the
// job completed; the lock is then the job's alone, as resume's is.
func Attach(id string, opts Options) (*Job, error) {
	st, err := opts.Store.Open(id)
	if err != nil {
		return nil, err
	}
	var j *Job
	if opts.Replace != nil {
		j, err = reopenReplaced(st, opts)
	} else {
		j, err = reopen(st, opts, true)
	}
	if err != nil {
		return nil, err
	}
	if err := j.restoreSetup(); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

// restoreSetup restores the variables the job's setup defined, from the
// journal.
func (j *Job) restoreSetup() error {
	done, err := j.readJournal()
	if err != nil {
		return err
	}
	for _, step := range j.wf.Setup {
		if rec, ok := done[PhaseSetup][step.Index]; ok {
			executor.ResumedOutput(step, PhaseSetup, j.scope)
			j.applyVars(PhaseSetup, executor.RecordedVars(rec))
		}
	}
	return nil
}

// reopen locks a stored job (shared: for Attach) and opens it from its
// workflow copy, with its stored variables and its secrets given again
// (opts.Vars: --set).
func reopen(st *state.Job, opts Options, shared bool) (*Job, error) {
	wf, err := storedWorkflow(st, &opts)
	if err != nil {
		return nil, err
	}
	if err := lockJob(st, shared); err != nil {
		return nil, err
	}
	return open(st, wf, opts, nil)
}

// reopenReplaced locks a stored job alone and opens it with the
// replacement opts.Replace, which becomes its copy when it fits the job's
// progress (job_changed records it).
func reopenReplaced(st *state.Job, opts Options) (*Job, error) {
	j, changed, err := reopenPlanned(st, opts)
	if err == nil && changed != nil {
		j.emit(*changed)
	}
	return j, err
}

// reopenPlanned locks a stored job alone and opens it as resume's plan
// makes it (planResume: --set values, a replacement file), which it
// stores first; changed is the job_changed event to record, nil when
// nothing changed.
func reopenPlanned(st *state.Job, opts Options) (j *Job, changed *eventlog.Event, err error) {
	if err := lockJob(st, false); err != nil {
		return nil, nil, err
	}
	r, err := planResume(st, opts)
	if err != nil {
		st.Unlock()
		return nil, nil, err
	}
	kept, err := r.apply(st)
	if err != nil {
		st.Unlock()
		return nil, nil, err
	}
	opts.Vars = r.vars
	if j, err = open(st, r.wf, opts, r.env); err != nil {
		return nil, nil, err
	}
	if kept != "" || len(r.set) > 0 {
		e := eventlog.JobChanged(r.changedFile(kept), kept, r.set)
		changed = &e
	}
	return j, changed, nil
}

// storedWorkflow loads a stored job's workflow copy and sets opts.Vars to
// its stored variables with its secrets given again (opts.Vars: --set).
func storedWorkflow(st *state.Job, opts *Options) (*workflow.Workflow, error) {
	wf, err := loadStored(st)
	if err != nil {
		return nil, err
	}
	if opts.Vars, err = jobenv.Restore(st.Meta, opts.Vars); err != nil {
		return nil, err
	}
	return wf, nil
}

// RestoreIsolation sets where a stored standard workflow's commands run
// to where they ran when its job started: recorded in its metadata, or,
// for a job recorded before runner recorded it, where runner ran them
// then (a job worktree only with merge: or merge_back: true).
func RestoreIsolation(wf *workflow.Workflow, m state.Meta) {
	switch {
	case wf.Mode != workflow.Standard:
	case m.Isolation != "":
		wf.Isolation = workflow.Isolation(m.Isolation)
	case wf.Merge != nil || wf.MergeBack:
		wf.Isolation = workflow.IsolationWorktree
	default:
		wf.Isolation = workflow.IsolationNone
	}
}

// readJournal reads the finished steps with the secret values in their
// variables put back.
func (j *Job) readJournal() (map[string]map[int]state.StepRecord, error) {
	done, err := j.st.ReadJournal()
	for _, recs := range done {
		for i, rec := range recs {
			rec.Vars = j.secrets.Unseal(rec.Vars)
			recs[i] = rec
		}
	}
	return done, err
}

// Close releases a job opened with Attach.
func (j *Job) Close() error {
	j.close()
	return j.eventLogErr()
}

// open opens the log and journal of a job whose lock st holds; on an
// error it releases the lock. env is the job's environment when the
// caller resolved it; nil: prepare resolves it.
func open(st *state.Job, wf *workflow.Workflow, opts Options, env *jobenv.Env) (*Job, error) {
	j, err := prepare(st, wf, opts, env)
	if err != nil {
		j.close()
		return nil, err
	}
	j.exec.Emit = func(e eventlog.Event) { j.emit(e) }
	if j.log, err = eventlog.Open(st.Layout().Events, st.Meta.ID, eventlog.Options{Now: opts.Now, Redact: j.secrets.Masker()}); err != nil {
		j.close()
		return nil, err
	}
	if j.journal, err = st.OpenJournal(); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

// prepare makes a job's variables, secret masking and executor (whose
// Emit is left to the caller), without opening its log or journal. env is
// the job's environment, or nil to resolve it with the job's profile and
// kept command outputs.
func prepare(st *state.Job, wf *workflow.Workflow, opts Options, env *jobenv.Env) (*Job, error) {
	j := &Job{st: st, id: st.Meta.ID, wf: wf, seed: st.Meta.Seed, listener: opts.Listener, started: nowFunc(opts.Now)(), exitCode: opts.ExitCode}
	environ := os.Environ()
	if env == nil {
		var err error
		spec := jobenv.Spec{Set: opts.Vars, Profile: st.Meta.Profile, Cached: st.Meta.EnvCache}
		if env, err = jobenv.Resolve(opts.context(), wf, spec, environ); err != nil {
			return j, fmt.Errorf("job %s: %w", st.Meta.ID, err)
		}
	}
	j.scope = executor.NewScope(env.Vars(), environ)
	j.scope.Set("workflow", map[string]any{"name": st.Meta.Workflow, "id": st.Meta.ID})
	if err := wf.ResolveDurations(j.scope.PlainLookup()); err != nil {
		return j, err
	}
	j.secrets = env.Secrets(wf, j.scope, st.Meta.Secrets, environ)
	mask := j.secrets.Masker()
	j.out, j.tag = [2]io.Writer{opts.Stdout, opts.Stderr}, opts.Tag
	j.exec = &executor.Executor{
		JobID:   st.Meta.ID,
		Mask:    mask,
		Env:     append(environ, env.Environ()...),
		Secrets: env.SecretEnv(),
		Stdout:  executor.MaskOutput(opts.Stdout, mask),
		Stderr:  executor.MaskOutput(opts.Stderr, mask),
		Seed:    st.Meta.Seed,
		TmpDir:  st.Layout().Tmp,
		Agent:   executor.ResolveAgent(wf.Agent, environ),

		GitContext: wf.GitContext,
	}
	if err := os.MkdirAll(j.exec.TmpDir, 0o700); err != nil {
		return j, fmt.Errorf("job %s: %w", st.Meta.ID, err)
	}
	return j, nil
}

// lockJob holds a lock on the job for as long as this process runs it
// (exclusive) or runs some of its items (shared); the kernel releases it
// when the process dies, whatever its children hold.
func lockJob(st *state.Job, shared bool) error {
	err := st.Lock(shared)
	switch {
	case errors.Is(err, state.ErrLocked) && shared:
		return fmt.Errorf("job %s is running (pid %d); wait for it to end or stop it first", st.Meta.ID, st.Meta.PID)
	case errors.Is(err, state.ErrLocked):
		return fmt.Errorf("job %s is being run by another process (pid %d)", st.Meta.ID, st.Meta.PID)
	}
	return err
}

// emit writes events produced together to the log, with one write (an
// event whose sequel follows at once waits for it: eventlog.Coalesce),
// and shows the events written to the listener.
func (j *Job) emit(events ...eventlog.Event) {
	events, err := j.log.Coalesce(events...)
	j.recordErr(err)
	j.spend.Lock()
	for _, e := range events {
		if u, ok := e.Usage(); ok {
			j.spent(u)
		}
		j.running.Observe(e)
	}
	j.spend.Unlock()
	if j.listener != nil {
		for _, e := range events {
			j.listener(e)
		}
	}
}

// spent adds what an agent spent to the job's total in its metadata,
// which `runner jobs` and the end line read.
func (j *Job) spent(u eventlog.AgentUsage) {
	j.recordErr(j.UpdateMeta(func(m *state.Meta) {
		total := u
		if m.Spend != nil {
			total = m.Spend.Add(u)
		}
		total.SessionID, total.Model = "", "" // a job's many sessions have no one id
		m.Spend = &total
	}))
}

// recordErr keeps the first failure to record what the job did, which
// fails it.
func (j *Job) recordErr(err error) {
	if err == nil {
		return
	}
	j.mu.Lock()
	if j.logErr == nil {
		j.logErr = err
	}
	j.mu.Unlock()
}

// Emit records events produced together (for the layers that drive a job).
func (j *Job) Emit(events ...eventlog.Event) { j.emit(events...) }

// Secrets hides the job's secret values in what it shows and stores.
func (j *Job) Secrets() *jobenv.Secrets { return j.secrets }

// eventLogErr returns the first failure to write the event log, if any.
func (j *Job) eventLogErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.logErr
}

// context is the context that ends what opening the job runs: none
// given (tests, a caller that never cancels), nothing ends it.
func (o Options) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

func nowFunc(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

func (j *Job) close() {
	if j.journal != nil {
		j.journal.Close()
	}
	if j.log != nil {
		j.log.Close()
	}
	j.st.Unlock()
}
