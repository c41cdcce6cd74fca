package state

import (
	"path/filepath"
	"strconv"
)

// Layout is where each of a job's files is in its directory: the one
// place that names them. Every package that reads or writes a job's files
// takes their paths from here.
type Layout struct {
	// Dir is the job directory.
	Dir string
	// Meta is the metadata (Meta), rewritten atomically; MetaLock orders
	// the processes that update it (Update).
	Meta, MetaLock string
	// Lock carries the job's lock (Lock).
	Lock string
	// Journal is the finished steps of the job's phases (Journal).
	Journal string
	// Events is the event log (package eventlog).
	Events string
	// Items is a MapReduce job's items, written once, when its map loads
	// them; ItemStates is its item log (ItemLog), and ItemIndex the log's
	// index: every item's last state as of an offset of the log
	// (ItemStates), rewritten as the log grows.
	Items, ItemStates, ItemIndex string
	// Results is the map's results, a line per item; ResultsJSON their
	// array, which reduce reads as ${map.results}.
	Results, ResultsJSON string
	// DLQ is the bbolt dead-letter queue; DLQHolder the record of the
	// process that holds it open (jobdlq).
	DLQ, DLQHolder string
	// Logs holds the output logs: the items' in ItemLogs (ItemLog), the
	// steps' in StepLogs (StepLog), each with its raw stream log beside it
	// when a claude: step's agent streamed (ItemStream, StepStream), and
	// the items' logs of runners before them (LegacyItemLog).
	Logs, ItemLogs, StepLogs string
	// Tmp is the steps' scratch directory (Retry-After files, the output
	// a fix loop hands on).
	Tmp string
	// NATSLock is held by the process that runs the job's items on NATS.
	NATSLock string
	// Worktree is the job's git worktree (map isolation: worktree, a
	// standard workflow run in a worktree), WorktreeLock orders the merges
	// into its branch, ItemWorktrees holds the items' worktrees, and
	// GitProcesses records the process groups of the job's gits.
	Worktree, WorktreeLock, ItemWorktrees, GitProcesses string
	// Tombstone is not in the directory but beside it: the name the
	// directory takes when its job is removed (Job.Bury), which no
	// listing or lookup of jobs takes for a job's.
	Tombstone string
}

// tombstonePrefix starts the name of a job directory's tombstone: a dot,
// which no job id starts with (ValidID).
const tombstonePrefix = ".rm-"

// ItemsFile is the name of a MapReduce job's items file (Layout.Items),
// which resume's refusals name.
const ItemsFile = "items.jsonl"

// LayoutOf is the layout of the job directory dir.
func LayoutOf(dir string) Layout {
	at := func(name string) string { return filepath.Join(dir, name) }
	return Layout{
		Dir:           dir,
		Meta:          at("job.json"),
		MetaLock:      at("meta.lock"),
		Lock:          at("job.lock"),
		Journal:       at("progress.jsonl"),
		Events:        at("events.jsonl"),
		Items:         at(ItemsFile),
		ItemStates:    at("items-state.jsonl"),
		ItemIndex:     at("items-state.idx"),
		Results:       at("results.jsonl"),
		ResultsJSON:   at("results.json"),
		DLQ:           at("dlq.db"),
		DLQHolder:     HolderOf(at("dlq.db")),
		Logs:          at("logs"),
		ItemLogs:      at(filepath.Join("logs", "items")),
		StepLogs:      at(filepath.Join("logs", "steps")),
		Tmp:           at("tmp"),
		NATSLock:      at("nats.lock"),
		Worktree:      at("worktree"),
		WorktreeLock:  at("worktree.lock"),
		ItemWorktrees: at("worktrees"),
		GitProcesses:  at("git-processes"),
		Tombstone:     filepath.Join(filepath.Dir(dir), tombstonePrefix+filepath.Base(dir)),
	}
}

// HolderOf is the path of the record of the process that holds the DLQ
// file at path open: beside it.
func HolderOf(path string) string { return path + ".holder" }

// Layout is the layout of the directory of job id in the store.
func (s Store) Layout(id string) Layout { return LayoutOf(filepath.Join(s.jobsDir(), id)) }

// ItemLog is the path of the output log of the item id.
func (l Layout) ItemLog(id string) string { return filepath.Join(l.ItemLogs, ItemLogName(id)) }

// ItemStream is the path of the raw stream log of the item id: the
// stream-json its claude: steps' agents wrote, all its attempts, beside
// its output log.
func (l Layout) ItemStream(id string) string { return filepath.Join(l.ItemLogs, ItemStreamName(id)) }

// StepStream is the path of the raw stream log of the step at index of
// phase: StepLogs/PHASE-N.jsonl, beside its output log.
func (l Layout) StepStream(phase string, index int) string {
	return filepath.Join(l.StepLogs, stepFileName(phase, index)+".jsonl")
}

// StepLog is the path of the output log of the step at index (0-based)
// of phase (commands, setup, reduce, merge): StepLogs/PHASE-N.log, N
// counting from 1.
func (l Layout) StepLog(phase string, index int) string {
	return filepath.Join(l.StepLogs, StepLogName(phase, index))
}

// StepLogName is the file name of the output log of the step at index of
// phase.
func StepLogName(phase string, index int) string { return stepFileName(phase, index) + ".log" }

// stepFileName is the name of the files of the step at index of phase,
// without their extension.
func stepFileName(phase string, index int) string { return phase + "-" + strconv.Itoa(index+1) }

// LegacyItemLog is where runners before item logs were named by id wrote
// the output of the item at index: a job they ran keeps it there.
func (l Layout) LegacyItemLog(index int) string {
	return filepath.Join(l.Logs, "item-"+strconv.Itoa(index)+".log")
}

// WorkflowCopy is the path of the workflow copy named name (Meta.CopyName,
// or one it replaced).
func (l Layout) WorkflowCopy(name string) string { return filepath.Join(l.Dir, name) }

// Layout is the layout of the job's directory, made once by Create and
// Open (an item's log path is asked for per attempt); only while Create
// writes the job in its temporary directory is it made on each call.
func (j *Job) Layout() Layout {
	if j.layout.Dir != j.Dir {
		return LayoutOf(j.Dir)
	}
	return j.layout
}
