package workflow

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/runnerdev/runner/workflow/eventlog"
	"github.com/runnerdev/runner/workflow/interp"
	"github.com/runnerdev/runner/workflow/state"
)

// Job is a job being run (started or resumed) by this process: its durable
// state, event log, journal, variables and executor.
type Job struct {
	State    *state.Job
	Workflow *Workflow
	Scope    *Scope
	Executor *Executor
	Seed     uint64
	Resumed  bool

	log      *eventlog.Log
	journal  *state.Journal
	lock     *os.File
	done     map[string]map[int]state.StepRecord
	listener func(eventlog.Event)
	started  time.Time
	mask     func(string) string // nil: no secrets

	mu     sync.Mutex
	logErr error // the first event log write error
}

// Options configure starting or resuming a job.
type Options struct {
	Store    state.Store
	JobID    string            // run only; "" = generated
	Vars     map[string]string // --set; run only (resume uses the stored ones)
	Seed     *uint64           // run only; nil = random
	Stdout   io.Writer         // live command output
	Stderr   io.Writer
	Listener func(eventlog.Event) // sees every event as written (for the terminal)
	Now      func() time.Time

	shared bool // Attach: a shared lock
}

// Start creates a job for wf (whose file content is source) and records
// job_started.
func Start(wf *Workflow, source []byte, opts Options) (*Job, error) {
	now := nowFunc(opts.Now)
	seed := rand.Uint64()
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	id := opts.JobID
	if id == "" {
		id = state.NewID(wf.Name, now())
	}
	st, err := opts.Store.Create(state.Meta{
		ID: id, Workflow: wf.Name, File: wf.File, Mode: string(wf.Mode),
		Status: state.Running, Seed: seed, Vars: opts.Vars, Started: now(), PID: os.Getpid(),
		Steps: len(wf.Steps),
	}, source)
	if err != nil {
		return nil, err
	}
	j, err := open(st, wf, opts)
	if err != nil {
		return nil, err
	}
	j.emit("job_started", map[string]any{"seed": seed, "workflow": wf.Name, "file": wf.File, "mode": string(wf.Mode), "pid": os.Getpid()})
	return j, nil
}

// ErrCompleted is returned when resuming a job that completed.
var ErrCompleted = errors.New("already completed")

// Resume reopens a stopped, failed or interrupted job from its stored
// workflow copy and records job_resumed.
func Resume(id string, opts Options) (*Job, error) {
	st, err := opts.Store.Open(id)
	if err != nil {
		return nil, err
	}
	if st.Meta.Status == state.Completed {
		return nil, fmt.Errorf("job %s: %w; nothing to resume", id, ErrCompleted)
	}
	wf, err := Load(st.WorkflowCopy())
	if err != nil {
		return nil, fmt.Errorf("job %s: stored workflow: %w", id, err)
	}
	wf.File = st.Meta.File
	opts.Vars = st.Meta.Vars
	j, err := open(st, wf, opts)
	if err != nil {
		return nil, err
	}
	if j.done, err = st.ReadJournal(); err != nil {
		j.close()
		return nil, err
	}
	j.Resumed = true
	st.Meta.Status, st.Meta.PID, st.Meta.Error = state.Running, os.Getpid(), ""
	st.Meta.Finished = time.Time{}
	st.Meta.ResumedCount++
	if err := st.Save(); err != nil {
		j.close()
		return nil, err
	}
	j.emit("job_resumed", map[string]any{"pid": os.Getpid(), "resumed": st.Meta.ResumedCount})
	return j, nil
}

// Attach opens a job that is not running to run more of its work from
// another process (`runner dlq retry`): its lock is shared with other
// attached processes and excludes a run or resume; its status is left
// alone; the variables its setup defined are restored. Close releases it.
func Attach(id string, opts Options) (*Job, error) {
	st, err := opts.Store.Open(id)
	if err != nil {
		return nil, err
	}
	wf, err := Load(st.WorkflowCopy())
	if err != nil {
		return nil, fmt.Errorf("job %s: stored workflow: %w", id, err)
	}
	wf.File = st.Meta.File
	opts.Vars = st.Meta.Vars
	opts.shared = true
	j, err := open(st, wf, opts)
	if err != nil {
		return nil, err
	}
	done, err := st.ReadJournal()
	if err != nil {
		j.close()
		return nil, err
	}
	for _, rec := range done[PhaseSetup] {
		j.applyVars(PhaseSetup, RecordedVars(rec))
	}
	return j, nil
}

// Close releases a job opened with Attach.
func (j *Job) Close() error {
	j.close()
	return j.LogErr()
}

// open takes the job's lock and opens its log and journal.
func open(st *state.Job, wf *Workflow, opts Options) (*Job, error) {
	lock, err := lockJob(st, opts.shared)
	if err != nil {
		return nil, err
	}
	j := &Job{State: st, Workflow: wf, Seed: st.Meta.Seed, lock: lock, listener: opts.Listener, started: nowFunc(opts.Now)()}
	environ := os.Environ()
	vars, env, err := workflowEnv(wf, opts.Vars, environ)
	if err != nil {
		j.close()
		return nil, err
	}
	j.Scope = NewScope(vars, environ)
	j.mask = secretMasker(wf, env, environ)
	if j.log, err = eventlog.Open(st.EventsPath(), st.Meta.ID, eventlog.Options{Now: opts.Now, Redact: j.mask}); err != nil {
		j.close()
		return nil, err
	}
	if j.journal, err = st.OpenJournal(); err != nil {
		j.close()
		return nil, err
	}
	j.Executor = &Executor{
		JobID:  st.Meta.ID,
		Emit:   j.emit,
		Env:    append(environ, env...),
		Now:    opts.Now,
		Stdout: maskOutput(opts.Stdout, j.mask),
		Stderr: maskOutput(opts.Stderr, j.mask),
		Seed:   st.Meta.Seed,
		TmpDir: st.Path("tmp"),
	}
	if err := os.MkdirAll(j.Executor.TmpDir, 0o700); err != nil {
		j.close()
		return nil, fmt.Errorf("job %s: %w", st.Meta.ID, err)
	}
	return j, nil
}

// lockJob holds a lock on the job for as long as this process runs it
// (exclusive) or runs some of its items (shared); the kernel releases it if
// the process dies.
func lockJob(st *state.Job, shared bool) (*os.File, error) {
	f, err := os.OpenFile(st.Path("job.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", st.Meta.ID, err)
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) && shared {
			return nil, fmt.Errorf("job %s is running (pid %d); wait for it to end or stop it first", st.Meta.ID, st.Meta.PID)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("job %s is being run by another process (pid %d)", st.Meta.ID, st.Meta.PID)
		}
		return nil, fmt.Errorf("job %s: lock: %w", st.Meta.ID, err)
	}
	return f, nil
}

// workflowEnv expands the workflow's env (with --set overrides) into
// variables for interpolation and KEY=VALUE entries for commands.
func workflowEnv(wf *Workflow, set map[string]string, environ []string) (map[string]any, []string, error) {
	vars := map[string]any{}
	envMap := map[string]any{}
	var env []string
	sc := NewScope(vars, environ)
	for _, e := range wf.Env {
		v, ok := set[e.Name]
		if !ok {
			var err error
			if v, err = e.Value.Expand(sc.PlainLookup(), interp.Plain); err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		vars[e.Name], envMap[e.Name] = v, v
		env = append(env, e.Name+"="+v)
	}
	for k, v := range set {
		if _, ok := vars[k]; !ok {
			vars[k], envMap[k] = v, v
			env = append(env, k+"="+v)
		}
	}
	vars["env"] = envMap
	return vars, env, nil
}

// emit writes an event to the log and shows it to the listener.
func (j *Job) emit(typ string, fields map[string]any) {
	e, err := j.log.Emit(typ, fields)
	if err != nil {
		j.mu.Lock()
		if j.logErr == nil {
			j.logErr = err
		}
		j.mu.Unlock()
	}
	if j.listener != nil {
		j.listener(e)
	}
}

// Emit records an event (for the layers that drive a job).
func (j *Job) Emit(typ string, fields map[string]any) { j.emit(typ, fields) }

// Mask replaces the job's secret values in s with ***.
func (j *Job) Mask(s string) string {
	if j.mask == nil {
		return s
	}
	return j.mask(s)
}

// LogErr returns the first failure to write the event log, if any.
func (j *Job) LogErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.logErr
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
	if j.lock != nil {
		j.lock.Close()
	}
}
