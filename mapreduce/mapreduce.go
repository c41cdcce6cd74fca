// Package mapreduce runs MapReduce workflows: setup, one agent template
// over many items in up to max_parallel slots under the workflow error
// policy, then reduce; resumable at any point.
package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Options configure a MapReduce run.
type Options struct {
	MaxParallel int // overrides map.max_parallel when above 0
	DLQ         DeadLetters
	Dispatcher  itemtask.Backend // where items run: InProcess, agents, NATS workers
	// Ending says whether a job on a job branch (map.isolation: worktree)
	// that succeeded merges that branch into the branch it started on
	// (runner run --merge, merge_back: true, or the user's answer):
	// through the merge: block if the file has one, else with git merge.
	Ending workspace.Ending
	// Hard (--hard) stops the items running when the budget stops the
	// job, as an interrupt does (they stay pending), instead of letting
	// them finish.
	Hard bool
	// SaveEvery is how often the item counts are written to the job's
	// metadata while items run (for `runner jobs`); 0 means every second.
	SaveEvery time.Duration
}

// Summary is how a MapReduce job ended.
type Summary struct {
	Items   state.ItemCounts
	Stopped *errorpolicy.Verdict // the error policy stopped the map phase
	// End is the job branch (map.isolation: worktree), which holds
	// setup's, the merged items' and reduce's commits, and its merge;
	// empty without isolation.
	workspace.End
}

// StoppedError is returned when the error policy or the budget stopped
// the job; items not yet run stay pending and `runner resume` continues
// them.
type StoppedError struct {
	errorpolicy.Verdict
	Left int // the items not run (a dlq retry's: left in the DLQ)
}

func (e *StoppedError) Error() string {
	if e.Budget() {
		return fmt.Sprintf("stopped by its budget: %s; items left: %d", e.Reason, e.Left)
	}
	return "stopped by the error policy: " + e.Reason
}

// PhaseMap names the map phase in a job's final error line.
const PhaseMap = "map"

// Run runs a started or resumed MapReduce job: setup (steps already done
// are skipped), the items not yet finished, then reduce. With
// map.isolation: worktree all of it happens in worktrees of the job, on
// the job branch and branches of it, which are gone when Run returns;
// when opts.Ending merges, a job that succeeded ends with the job branch
// merged into the branch it started on.
func Run(ctx context.Context, j *job.Job, opts Options) (sum Summary, err error) {
	wf := j.Workflow()
	if err := Supports(wf, opts.Dispatcher); err != nil {
		return sum, err
	}
	trees, err := workspace.OpenWorktrees(ctx, refsOf(j), wf.Map, j.Executor().Env, j.Layout())
	if err != nil {
		return sum, err
	}
	if trees != nil {
		defer func() {
			if cerr := trees.EndJob(ctx); err == nil {
				err = cerr
			}
		}()
		if sum.End, err = j.EnterWorktree(ctx, trees.Tree, trees.ResumeJob); err != nil {
			return sum, err
		}
	}
	if err := runSetup(ctx, j); err != nil {
		return sum, err
	}
	ran, err := runMap(ctx, j, trees, opts)
	sum.Items, sum.Stopped = ran.Items, ran.Stopped
	if err != nil {
		return sum, &job.PhaseError{Phase: PhaseMap, Err: err}
	}
	if err := setMapVars(j, sum.Items); err != nil {
		return sum, err
	}
	if err := runReduce(ctx, j, sum.Items); err != nil || trees == nil || sum.Items.DLQ > 0 || !opts.Ending.Merges(sum.End) {
		return sum, err
	}
	how, err := j.MergeEnd(ctx, trees.Tree)
	if err != nil {
		return sum, &job.PhaseError{Phase: job.PhaseMerge, Err: err}
	}
	sum.Merged = how
	return sum, nil
}

// runReduce runs the reduce phase, unless the map had no items: then
// reduce is skipped, as Prodigy skips it, and an event says so.
func runReduce(ctx context.Context, j *job.Job, items state.ItemCounts) error {
	steps := j.Workflow().Reduce
	if items.Total == 0 && len(steps) > 0 {
		j.Emit(eventlog.ReduceSkipped(len(steps), "the map had no items"))
		return nil
	}
	_, err := j.RunPhase(ctx, job.PhaseReduce, steps)
	return err
}

// runSetup runs the setup phase, within setup.timeout when the file gives
// one.
func runSetup(ctx context.Context, j *job.Job) error {
	wf := j.Workflow()
	if t := wf.SetupTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t, fmt.Errorf("the setup phase did not end within its timeout of %s", t))
		defer cancel()
	}
	_, err := j.RunPhase(ctx, job.PhaseSetup, wf.Setup)
	return err
}

// runMap loads the items (once per job) and runs those not yet finished,
// each in a worktree of trees (nil: without isolation).
func runMap(ctx context.Context, j *job.Job, trees *workspace.Worktrees, opts Options) (Summary, error) {
	m := j.Workflow().Map
	parallel, err := maxParallel(m, j.Scope().Under(ctx), opts.MaxParallel)
	if err != nil {
		return Summary{}, err
	}
	files := filesOf(j)
	itemsPath := files.itemsPath()
	total, err := ensureItems(ctx, j, itemsPath)
	if err != nil {
		return Summary{}, err
	}
	itemLog, err := files.open()
	if err != nil {
		return Summary{}, err
	}
	defer itemLog.Close()
	results, err := openResults(j.Layout().Results, j.Layout())
	if err != nil {
		return Summary{}, err
	}
	defer results.close()
	if trees != nil {
		if err := settleMerged(ctx, j, trees, itemLog, results, opts.DLQ, itemsPath); err != nil {
			return Summary{}, err
		}
	}
	done, running, counts, err := reconcile(j, itemLog, results, opts.DLQ, itemsPath, total)
	if err != nil {
		return Summary{}, err
	}

	ep := j.Workflow().ErrorPolicy
	l := &ledger{job: j, items: itemLog, dlq: opts.DLQ, results: results, action: ep.OnItemFailure, tracker: errorpolicy.NewTracker(ep), counts: counts}
	run := attemptlog.RunFirst
	if j.Resumed() {
		run = attemptlog.RunResume
	}
	s, err := newScheduler(ctx, j, l, parallel, trees, dispatching{backend: opts.Dispatcher, run: run})
	if err != nil {
		return Summary{}, err
	}
	defer s.close()
	s.resumed, s.total = running, total
	ictx, stopItems := s.itemsContext(ctx, opts.Hard)
	defer stopItems()
	if trees != nil {
		restartItems(running)
	}
	if ep.OnItemFailure == errorpolicy.Retry {
		s.retry = j.Workflow().ItemRetry
	}
	if ep.Breaker != nil {
		s.gate = errorpolicy.NewGate(*ep.Breaker, func(to string) {
			j.Emit(eventlog.CircuitChanged(to, "workflow", ""))
		})
	}
	j.Emit(eventlog.MapStarted(total, counts.Pending, parallel, string(j.Workflow().Map.Isolation)))
	stopSaving := saveCounts(files, l, opts.SaveEvery)
	// The items an ended process left running go first (their tasks may
	// still be out, SPEC §11.2), then the others in order.
	// A finished item's line is passed over undecoded.
	start := func(resumed bool) error {
		skip := func(i int) bool {
			_, ok := running[i]
			return ok != resumed || done.Finished(i)
		}
		return items.ReadUnless(itemsPath, skip, func(it *Item) (bool, error) { return s.dispatch(ictx, it), nil })
	}
	if len(running) > 0 {
		err = start(true)
	}
	if err == nil && s.running(ctx) {
		err = start(false)
	}
	s.wait()
	stopSaving()
	sum := Summary{Items: l.Counts(), Stopped: s.stopped}
	if serr := files.setCounts(sum.Items); err == nil {
		err = serr
	}
	j.Emit(eventlog.MapCompleted(eventlog.ItemCounts(sum.Items)))
	switch {
	case err != nil:
		return sum, err
	case s.fatalErr != nil:
		return sum, s.fatalErr
	case ctx.Err() != nil:
		return sum, context.Cause(ctx)
	case s.stopped != nil:
		return sum, &StoppedError{Verdict: *s.stopped, Left: sum.Items.Pending}
	}
	return sum, nil
}

// dispatching is where a scheduler's tasks run, and what they say of
// themselves.
type dispatching struct {
	backend itemtask.Backend
	run     string // RunFirst, RunResume or RunDLQRetry
}

// newScheduler makes the scheduler of j's items and opens its dispatcher
// under ctx.
func newScheduler(ctx context.Context, j *job.Job, l *ledger, parallel int, trees *workspace.Worktrees, d dispatching) (*scheduler, error) {
	s := &scheduler{
		ledger:     l,
		trees:      trees,
		slots:      make(itemtask.Slots, parallel),
		jobID:      j.ID(),
		seed:       j.Seed(),
		runKind:    d.run,
		emit:       j.Emit,
		logPath:    filesOf(j).logPath,
		updateMeta: j.UpdateMeta,
		budget:     budgetOf(j),
		spent:      j.Spent,
		active:     map[string]*dispatch{},
	}
	// With worktree isolation the item's merge follows its steps: a crash
	// meanwhile must find them all checkpointed.
	if trees == nil {
		s.last = itemrun.LastStep(j.Workflow().Map.Template)
	}
	var err error
	s.dispatcher, err = d.backend.Open(ctx, jobView{j: j, trees: trees}, s)
	return s, err
}

// InProcess runs a job's items in this process, the job's executor
// running its template after setup; live, when not nil, shows their
// output as it comes (runner run --tag).
func InProcess(live *itemtask.Live) itemtask.Backend {
	return itemtask.Backend{Name: "this process", Can: itemrun.LocalCapabilities, Open: func(ctx context.Context, job itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		v, ok := job.(jobView)
		if !ok {
			return nil, fmt.Errorf("items run in this process only for a job the engine opened, not %T", job)
		}
		j := v.j
		return itemrun.Local(itemrun.NewRunner(j.Executor(), j.Scope(), j.Workflow().Map, j.Layout(), v.trees, live)).Open(ctx, job, h)
	}}
}

// View is what dispatchers may read of j, with its worktrees opened in
// this process when its map runs in them (its Repo).
func View(ctx context.Context, j *job.Job) (itemtask.Job, error) {
	trees, err := workspace.OpenWorktrees(ctx, refsOf(j), j.Workflow().Map, j.Executor().Env, j.Layout())
	return jobView{j: j, trees: trees}, err
}

// jobView is View's itemtask.Job; trees, when set, are the job's
// worktrees in this process (map.isolation: worktree), its Repo.
type jobView struct {
	j     *job.Job
	trees *workspace.Worktrees
}

func (v jobView) ID() string                  { return v.j.ID() }
func (v jobView) Seed() uint64                { return v.j.Seed() }
func (v jobView) AgentTimeout() time.Duration { return v.j.Workflow().Map.AgentTimeout }
func (v jobView) Layout() state.Layout        { return v.j.Layout() }

func (v jobView) Portable() (json.RawMessage, error) {
	p, err := v.j.Portable()
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

func (v jobView) Repo() itemtask.Repo {
	if v.trees == nil {
		return nil
	}
	return v.trees
}

func (v jobView) RunningItems() (map[int]state.ItemRecord, error) {
	return filesOf(v.j).RunningItems()
}

// saveCounts writes the item counts to the job's metadata every interval
// until the returned function is called.
func saveCounts(files itemFiles, l *ledger, every time.Duration) (stop func()) {
	if every <= 0 {
		every = time.Second
	}
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				_ = files.setCounts(l.Counts()) // progress only: the item log is the record
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// maxParallel resolves map.max_parallel (a number or $VAR), unless the
// command line overrides it.
func maxParallel(m *workflow.MapPhase, sc *executor.Scope, override int) (int, error) {
	if override > 0 {
		return override, nil
	}
	text := m.MaxParallel
	if name, ok := strings.CutPrefix(text, "$"); ok {
		name = strings.Trim(name, "{}")
		v, found := sc.PlainLookup()(name)
		if !found {
			return 0, fmt.Errorf("map.max_parallel: %s is not set", text)
		}
		text = fmt.Sprint(v)
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("map.max_parallel: %s is %q, not a number of at least 1", m.MaxParallel, text)
	}
	return n, nil
}

// ensureItems loads the map input into the job's items file unless an
// earlier run of the job did, and returns the number of items.
func ensureItems(ctx context.Context, j *job.Job, path string) (int, error) {
	if n, err := items.Count(path); err == nil {
		return n, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	start := time.Now()
	in, source, wait, err := openInput(ctx, j)
	if err != nil {
		return 0, err
	}
	n, lerr := items.Load(in, j.Workflow().Map, j.Scope().Under(ctx), path)
	in.Close()
	if err := errors.Join(lerr, wait()); err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("map input: %w", err)
	}
	j.Emit(eventlog.ItemsLoaded(n, source, time.Since(start)))
	return n, nil
}

// openInput opens map.input: an existing file is read; a text that looks
// like a file name and names none, or names something that is not a
// regular file, is an error (workflow.FindInput); anything else runs as a
// shell command whose stdout is the input (its non-zero exit fails the
// job). wait reports how the command ended. A relative file is looked for
// in the job's directory (its worktree, where setup may have written it),
// then in this process's (a file not committed).
func openInput(ctx context.Context, j *job.Job) (in io.ReadCloser, source string, wait func() error, err error) {
	m, sc := j.Workflow().Map, j.Scope().Under(ctx)
	path, err := m.Input.Expand(sc.PlainLookup(), interp.Plain)
	if err != nil {
		return nil, "", nil, fmt.Errorf("map input: %w", err)
	}
	dirs := []string{""}
	if j.Dir() != "" {
		dirs = []string{j.Dir(), ""}
	}
	switch file, err := workflow.FindInput(path, dirs); {
	case err != nil:
		return nil, "", nil, fmt.Errorf("map.input: %w", err)
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, "", nil, fmt.Errorf("map input: %w", err)
		}
		return f, "file " + filepath.Clean(file), func() error { return nil }, nil
	}
	command, err := m.Input.Expand(sc.Lookup(), interp.Shell)
	if err != nil {
		return nil, "", nil, fmt.Errorf("map input: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	result := make(chan error, 1)
	go func() {
		err := j.Executor().Stream(cctx, command, j.Dir(), pw)
		pw.Close()
		result <- err
	}()
	reader := &commandReader{PipeReader: pr, cancel: cancel}
	wait = func() error {
		err := <-result
		cancel()
		if err == nil || reader.closedEarly && ctx.Err() == nil {
			return nil // stopped early (max_items): its end does not matter
		}
		return err
	}
	return reader, "command " + command, wait, nil
}

// commandReader is the input command's stdout; closing it before the end
// stops the command.
type commandReader struct {
	*io.PipeReader
	cancel      context.CancelFunc
	eof         bool
	closedEarly bool // closed before the end (max_items): the command was stopped
}

func (r *commandReader) Read(p []byte) (int, error) {
	n, err := r.PipeReader.Read(p)
	r.eof = r.eof || errors.Is(err, io.EOF)
	return n, err
}

func (r *commandReader) Close() error {
	r.closedEarly = !r.eof
	r.cancel()
	return r.PipeReader.Close()
}

// setMapVars defines ${map.*} for reduce: the counts, and when the
// workflow reads the results (Workflow.ReadsResults), the results file,
// written now, and when a reduce step uses it, ${map.results} itself.
func setMapVars(j *job.Job, c state.ItemCounts) error {
	file := j.Layout().ResultsJSON
	abs, _ := filepath.Abs(file)
	vars := map[string]any{"total": c.Total, "successful": c.Succeeded, "failed": c.Failed, "skipped": c.Skipped, "results_file": abs}
	if !j.Workflow().ReadsResults {
		j.Define("map", vars)
		return nil
	}
	if err := writeResultsFile(j.Layout().Results, file); err != nil {
		return err
	}
	if usesResults(j.Workflow().Reduce) {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		if vars["results"], err = jsonvalue.Decode(data); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	j.Define("map", vars)
	return nil
}

// usesResults reports whether a step (or a step in a foreach's do)
// refers to ${map.results}.
func usesResults(steps []*workflow.Step) bool {
	for s := range workflow.AllSteps(steps) {
		if slices.ContainsFunc(s.Command.Refs(), func(p string) bool {
			return p == "map.results" || strings.HasPrefix(p, "map.results[") || strings.HasPrefix(p, "map.results.")
		}) {
			return true
		}
	}
	return false
}

// refsOf is the JobRefs of j.
func refsOf(j *job.Job) workspace.JobRefs {
	return workspace.JobRefs{ID: j.ID(), ItemBranches: j.Meta().ItemBranches, Target: j.Meta().TargetBranch}
}

// restartItems makes the items a process that died left running start
// again from their first step (in a fresh worktree): the work of the dead
// process went with its worktrees. Those it merged were recorded first
// (settleMerged).
func restartItems(running map[int]state.ItemRecord) {
	for i, rec := range running {
		rec.Steps = nil
		running[i] = rec
	}
}
