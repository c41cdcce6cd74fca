// Package state keeps each job's durable files under the state directory:
// its metadata, a copy of its workflow, and the progress journal that resume
// reads back.
package state

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// Status of a job.
type Status string

// Job statuses.
const (
	Running     Status = "running"
	Completed   Status = "completed"
	Failed      Status = "failed"
	Stopped     Status = "stopped"
	Interrupted Status = "interrupted"
)

// ErrNotFound is returned for a job id that has no job directory.
var ErrNotFound = errors.New("no such job")

// ErrAmbiguous is returned for a prefix of more than one job's id.
var ErrAmbiguous = errors.New("names more than one job")

// ErrInvalidID is returned when creating a job whose id cannot name a
// directory.
var ErrInvalidID = errors.New("invalid job id")

// ErrExists is returned when creating a job whose id is taken.
var ErrExists = errors.New("job already exists")

// ErrBuried is returned for the id of a job whose removal was cut short
// (Bury): there is no job of that id, and none can be made, until a
// removal finishes it.
var ErrBuried = errors.New("its removal was cut short; runner jobs rm or prune finishes it")

// Meta is a job's metadata, rewritten (atomically) when its status changes.
type Meta struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"` // the workflow's name
	File     string `json:"file"`     // the file it was started from (or resumed with), as given
	// FilePath is that file's absolute path and FileSum the SHA-256 of
	// its content then (hex), so that resume can tell when it changed;
	// "" for a job recorded before runner recorded them.
	FilePath     string            `json:"file_path,omitempty"`
	FileSum      string            `json:"file_sha256,omitempty"`
	CopyName     string            `json:"copy"` // the workflow copy's file name in the job dir
	Mode         string            `json:"mode"`
	Status       Status            `json:"status"`
	ExitCode     int               `json:"exit_code"`
	Seed         uint64            `json:"seed"`
	Vars         map[string]string `json:"vars,omitempty"`      // --set values, but secrets
	Secrets      []string          `json:"secrets,omitempty"`   // names of secrets resume must be given again
	Profile      string            `json:"profile,omitempty"`   // runner run --profile
	EnvCache     map[string]string `json:"env_cache,omitempty"` // outputs of env commands with cache: true, but secrets
	Started      time.Time         `json:"started"`
	Finished     time.Time         `json:"finished,omitzero"`
	PID          int               `json:"pid,omitempty"` // the process running it now
	Error        string            `json:"error,omitempty"`
	Steps        int               `json:"steps,omitempty"`
	StepsDone    int               `json:"steps_done,omitempty"`
	Items        *ItemCounts       `json:"items,omitempty"`
	MaxParallel  int               `json:"max_parallel,omitempty"`
	ResumedCount int               `json:"resumed,omitempty"`

	// Spend is what the job's agents spent, all its runs (resumes, dlq
	// retries) together, as their agent_usage events were recorded; nil
	// while no agent reported any.
	Spend *eventlog.AgentUsage `json:"spend,omitempty"`
	// BudgetUSD is the job's budget in USD given on the command line
	// (run or resume --budget-usd), which replaces the workflow's
	// budget.max_cost_usd; 0: none given.
	BudgetUSD float64 `json:"budget_usd,omitempty"`

	// ItemsSettled says which files Items were last settled with; nil
	// once they are written again (and in a job of an older runner).
	ItemsSettled *ItemsSettled `json:"items_settled,omitempty"`

	// RanMS is the time the job's runs took (run, each resume), in
	// milliseconds: its wall clock less the pauses between runs. A run
	// whose process was killed counts until its last event (added when
	// the job is resumed).
	RanMS int64 `json:"ran_ms,omitempty"`
	// RunStarted is when the job's last run (run or resume) began: a run
	// whose process was killed went on from it to its last event.
	RunStarted time.Time `json:"run_started,omitzero"`
	// TargetBranch is the branch checked out where a job whose map runs
	// in git worktrees started, which --merge merges the job branch into
	// ("" when HEAD was detached).
	TargetBranch string `json:"target_branch,omitempty"`
	// ItemBranches is the prefix of the branches of a job whose map runs
	// in git worktrees, one per item (runner-items/<job id>/); "" for a
	// job recorded before runner named them so, whose item branches are
	// runner/<job id>.items/<item>.
	ItemBranches string `json:"item_branches,omitempty"`
	// Isolation is where a standard workflow's commands run, as decided
	// when the job started ("worktree" or "none"; --in-place and a run
	// outside a git work tree decide it too), so that resume runs them
	// in the same place; "" for a MapReduce job, and for a job recorded
	// before runner recorded it.
	Isolation string `json:"isolation,omitempty"`
	// Dist is where a job whose items run on NATS workers sends them
	// (runner run --nats); nil for a job whose items run here.
	Dist *Dist `json:"dist,omitempty"`

	// OwnerDied is set by List, never saved: the job was running and the
	// process running it is gone without recording how it ended.
	OwnerDied bool `json:"owner_died,omitempty"`
}

// Dist is how a job reaches its NATS workers: never credentials.
type Dist struct {
	URL     string `json:"url,omitempty"` // without userinfo
	Context string `json:"context,omitempty"`
	Queue   string `json:"queue"`
	// Key is J of SPEC §11.3, the job's name in subjects, message ids and
	// the spec bucket: drawn at random once per job, so that two jobs of
	// one id (in other state directories) never share them.
	Key string `json:"key"`
	// Epoch counts the processes that have run the job's items on NATS
	// (run, resume, dlq retry): each takes the next one before it
	// publishes, so that no process reuses another's message ids.
	Epoch int `json:"epoch"`
}

// ItemCounts are a MapReduce job's item totals.
type ItemCounts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	DLQ       int `json:"dlq"`
	Pending   int `json:"pending"`
}

// ItemsSettled is the state of a MapReduce job's DLQ and item log that
// its item counts were settled with (at the end of the map phase, of a
// `dlq retry`, of a `dlq purge`): while the DLQ is still at its
// generation and the item log of its size, the counts hold as they are
// and `runner jobs` shows them without reading either (Holds).
type ItemsSettled struct {
	DLQGeneration uint64 `json:"dlq_generation"`
	ItemLogSize   int64  `json:"item_log_size"`
}

// Holds reports whether the counts settled with s still hold for a DLQ
// at generation and an item log of itemLogSize bytes; a nil s never
// holds.
func (s *ItemsSettled) Holds(generation uint64, itemLogSize int64) bool {
	return s != nil && s.DLQGeneration == generation && s.ItemLogSize == itemLogSize
}

// Store is a state directory.
type Store struct {
	Dir string
}

// Job is one job's directory.
type Job struct {
	Dir  string
	Meta Meta

	layout Layout   // of Dir, made once by Create and Open
	lock   *os.File // held by Create or Lock
}

var unsafeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// NewID makes a job id from a workflow name and a start time.
func NewID(name string, t time.Time) string {
	slug := strings.Trim(unsafeID().ReplaceAllString(strings.ToLower(name), "-"), "-.")
	if slug == "" {
		slug = "job"
	}
	if len(slug) > 40 {
		slug = slug[:40]
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", slug, t.UTC().Format("20060102-150405"), hex.EncodeToString(b[:]))
}

// CheckID returns an ErrInvalidID error naming id when it cannot name a
// job directory.
func CheckID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w %q (use letters, digits, '.', '_' and '-', not starting with '.')", ErrInvalidID, id)
	}
	return nil
}

// ValidID reports whether id can name a job directory: not one that
// starts with a dot, which names a job being made (Create) or removed
// (Bury), never a job.
func ValidID(id string) bool {
	return id != "" && id[0] != '.' && !unsafeID().MatchString(id) && len(id) <= 128
}

func (s Store) jobsDir() string { return filepath.Join(s.Dir, "jobs") }

// ignoreInGit writes a .gitignore of "*" into the state directory (unless
// it has one), so that a state directory inside a git work tree (.runner
// in the repository a workflow changes) is never part of that tree: not
// in git status, not in auto_commit's git add -A.
func (s Store) ignoreInGit() error {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# runner's state: never part of the repository around it\n*\n")
	return errors.Join(err, f.Close())
}

// Create makes a new job directory holding a copy of the workflow source,
// with its lock taken (exclusive; Unlock releases it). The directory is
// filled and locked under a temporary name and renamed into place, so that
// a crash never leaves a half-made job behind its id and a job is never
// seen running without its owner.
func (s Store) Create(meta Meta, source []byte) (*Job, error) {
	if err := CheckID(meta.ID); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.jobsDir(), 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := s.ignoreInGit(); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	dir := s.Layout(meta.ID).Dir
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("job %s: %w", meta.ID, ErrExists)
	}
	// After the directory: a removal renames it to its tombstone, so one
	// of the two is there until the removal ends.
	if s.buried(meta.ID) {
		return nil, fmt.Errorf("job %s: %w", meta.ID, ErrBuried)
	}
	tmp, err := os.MkdirTemp(s.jobsDir(), ".new-"+meta.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if meta.CopyName == "" {
		meta.CopyName = "workflow" + filepath.Ext(meta.File)
	}
	if err := os.WriteFile(filepath.Join(tmp, meta.CopyName), source, 0o600); err != nil {
		return nil, fmt.Errorf("job %s: %w", meta.ID, err)
	}
	j := &Job{Dir: tmp, Meta: meta}
	// No temporary file and no fsync: the directory, new and private, is
	// the job's from its rename on, as the workflow copy in it is; a
	// process killed before sees no job, and the first Save syncs it.
	data, err := j.metaJSON()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(j.Layout().Meta, data, 0o600); err != nil {
		return nil, fmt.Errorf("job %s: %w", meta.ID, err)
	}
	if err := j.Lock(false); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		j.Unlock()
		if errors.Is(err, os.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil, fmt.Errorf("job %s: %w", meta.ID, ErrExists)
		}
		return nil, fmt.Errorf("state dir: %w", err)
	}
	j.Dir, j.layout = dir, LayoutOf(dir)
	return j, nil
}

// Open loads an existing job.
func (s Store) Open(id string) (*Job, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	layout := s.Layout(id)
	data, err := os.ReadFile(layout.Meta)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	j := &Job{Dir: layout.Dir, layout: layout}
	if err := json.Unmarshal(data, &j.Meta); err != nil {
		return nil, fmt.Errorf("job %s: damaged job.json: %w", id, err)
	}
	return j, nil
}

// Find returns the id of the job that arg names: the job with that id,
// else the one job whose id starts with arg (ErrAmbiguous, naming them,
// when several do; ErrNotFound when none does).
func (s Store) Find(arg string) (string, error) {
	if ValidID(arg) {
		if _, err := os.Stat(s.Layout(arg).Meta); err == nil {
			return arg, nil
		}
	}
	ids, err := s.IDs()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, arg) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		if s.buried(arg) {
			return "", fmt.Errorf("job %q: %w: %w", arg, ErrNotFound, ErrBuried)
		}
		return "", fmt.Errorf("job %q: %w", arg, ErrNotFound)
	case 1:
		return matches[0], nil
	}
	const shown = 5
	list := strings.Join(matches[:min(len(matches), shown)], ", ")
	if len(matches) > shown {
		list += fmt.Sprintf(" and %d more", len(matches)-shown)
	}
	return "", fmt.Errorf("job %q %w: %s", arg, ErrAmbiguous, list)
}

// IDs returns the ids of the jobs in the store, sorted, without reading
// them.
func (s Store) IDs() ([]string, error) {
	entries, err := s.entries()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && ValidID(e.Name()) { // not a job being made or removed
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// entries lists the jobs directory: the jobs, those being made and the
// tombstones (none when it does not exist yet).
func (s Store) entries() ([]os.DirEntry, error) {
	entries, err := os.ReadDir(s.jobsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return entries, nil
}

// Latest returns the id of the job started last (ErrNotFound when there
// is none that can be read).
func (s Store) Latest() (string, error) {
	jobs, err := s.List()
	if err != nil {
		return "", err
	}
	for i := len(jobs) - 1; i >= 0; i-- {
		if !jobs[i].Started.IsZero() {
			return jobs[i].ID, nil
		}
	}
	return "", fmt.Errorf("no job: %w", ErrNotFound)
}

// List returns every job, oldest first. Jobs whose metadata cannot be read
// are returned with only ID set and Status "permission denied" or
// "damaged"; a running job whose
// process is gone is returned interrupted, with OwnerDied set.
func (s Store) List() ([]Meta, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, id := range ids {
		j, err := s.Open(id)
		if err == nil {
			err = j.checkOwner(s)
		}
		if err != nil {
			out = append(out, Meta{ID: id, Status: unreadable(err), Error: err.Error()})
			continue
		}
		out = append(out, j.Meta)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out, nil
}

// unreadable is the status of a job that cannot be read for err.
func unreadable(err error) Status {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied"
	}
	return "damaged"
}

// Save writes the metadata atomically (temporary file, fsync, rename).
func (j *Job) Save() error {
	data, err := j.metaJSON()
	if err != nil {
		return err
	}
	return writeAtomic(j.Layout().Meta, data)
}

// metaJSON is the job.json of the metadata.
func (j *Job) metaJSON() ([]byte, error) {
	data, err := json.MarshalIndent(j.Meta, "", "  ")
	return append(data, '\n'), err
}

// Update applies fn to the job's current metadata and saves it, under a
// lock, so that processes attached to one job (several `dlq retry`) do not
// lose each other's changes.
func (j *Job) Update(fn func(*Meta)) error {
	lock, err := os.OpenFile(j.Layout().MetaLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("job %s: lock: %w", j.Meta.ID, err)
	}
	data, err := os.ReadFile(j.Layout().Meta)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("job %s: damaged job.json: %w", j.Meta.ID, err)
	}
	fn(&m)
	j.Meta = m
	return j.Save()
}

// WorkflowCopy is the path of the stored workflow copy.
func (j *Job) WorkflowCopy() string { return j.Layout().WorkflowCopy(j.Meta.CopyName) }

// maxKeptCopies bounds the workflow copies one job keeps.
const maxKeptCopies = 1000

// ReplaceWorkflowCopy stores source as the job's workflow copy, keeping
// the one it replaces beside it as workflow.N.EXT (the first N free), whose
// name it returns. The old copy is linked to its new name before the new
// one is written in its place (atomically), so that a crash keeps one of
// them as the copy and loses neither.
func (j *Job) ReplaceWorkflowCopy(source []byte) (kept string, err error) {
	ext := filepath.Ext(j.Meta.CopyName)
	base := strings.TrimSuffix(j.Meta.CopyName, ext)
	err = os.ErrExist
	for n := 1; errors.Is(err, os.ErrExist) && n <= maxKeptCopies; n++ {
		kept = fmt.Sprintf("%s.%d%s", base, n, ext)
		err = os.Link(j.WorkflowCopy(), j.Layout().WorkflowCopy(kept))
	}
	if err != nil {
		return "", fmt.Errorf("job %s: keep the workflow copy: %w", j.Meta.ID, err)
	}
	if err := writeAtomic(j.WorkflowCopy(), source); err != nil {
		return "", fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	return kept, nil
}

// fsync makes a file's data durable (a variable, so that tests count the
// fsyncs).
var fsync = (*os.File).Sync

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := fsync(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
