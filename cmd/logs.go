package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

type logsOptions struct {
	Attempt int
	Follow  bool
	Step    string
}

func newLogsCommand(g *globalOptions) *cobra.Command {
	var o logsOptions
	c := &cobra.Command{
		Use:   "logs JOB [STEP|ITEM]",
		Short: "Show a step's or a map item's output, or list the steps and items that printed",
		Long: `Show the output (stdout and stderr, secrets masked) of one step of a
standard workflow, named by its name, its id or its number (from 1), or
of one item of a MapReduce job, named by its id or, when no item has
that id, by its index. The steps of a MapReduce job's setup, reduce and
merge phases are named with --step (a name, an id, or PHASE-N such as
setup-1). Each attempt's output starts with a header line naming the
attempt and the run (run, resume, dlq retry) that made it. Without STEP
or ITEM, list the steps and items that printed something, with the size
of their logs.`,
		Example: `  runner logs ci-20261122-101500-a1b2c3 vet
  runner logs latest 2 --attempt 2
  runner logs resize-20261122-101500-a1b2c3 photo-17.jpg
  runner logs resize-20261122-101500-a1b2c3 --step reduce-1
  runner logs --follow JOB ITEM
  runner logs JOB`,
		Args: rangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			return runLogs(c.Context(), g, o, args)
		},
	}
	f := c.Flags()
	f.IntVar(&o.Attempt, "attempt", 0, "only the output of this attempt (of every run that made one)")
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing the output as it grows until the job's current run ends or its process is gone")
	f.StringVar(&o.Step, "step", "", "show this step's output: its name, id, or PHASE-N (a MapReduce job's setup, reduce and merge steps)")
	takesJob(g, c)
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return g.completeJobs(toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return completeLogs(g, args[0], toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return c
}

func runLogs(ctx context.Context, g *globalOptions, o logsOptions, args []string) error {
	if o.Attempt < 0 {
		return usagef("--attempt %d: attempts count from 1", o.Attempt)
	}
	j, err := g.store().Open(args[0])
	if err != nil {
		return err
	}
	mapReduce := j.Meta.Mode == string(workflow.MapReduce)
	step := o.Step
	if step != "" && len(args) == 2 {
		return usagef("--step %s: name a step or an item, not both", step)
	}
	if !mapReduce && len(args) == 2 {
		step = args[1]
	}
	if step == "" && len(args) == 1 {
		if o.Attempt > 0 || o.Follow {
			return usagef("--attempt and --follow show one log: name the STEP or ITEM")
		}
		return listLogs(g, j, mapReduce)
	}
	out := newLogPrinter(g.stdout, o.Attempt)
	var path, what string
	if step != "" {
		s, err := findStep(j, step)
		if err != nil {
			return err
		}
		path, what = j.Layout().StepLog(s.phase, s.index), fmt.Sprintf("step %q", s.label)
	} else {
		it, err := findItem(j, args[1])
		if err != nil {
			return err
		}
		if _, err := out.copyFrom(j.Layout().LegacyItemLog(it.Index), 0, true); err != nil {
			return err
		}
		path, what = j.Layout().ItemLog(it.ID), "item "+it.ID
	}
	if o.Follow {
		return followLog(ctx, g, j, path, out)
	}
	if _, err := out.copyFrom(path, 0, true); err != nil {
		return err
	}
	if !out.printed {
		out.sayNothing(g.stderr, what)
	}
	return nil
}

// findItem returns the job's item whose id is arg, else the one at index
// arg.
func findItem(j *state.Job, arg string) (*items.Item, error) {
	var byID, byIndex *items.Item
	index, err := strconv.Atoi(arg)
	if err != nil {
		index = -1
	}
	total := 0
	err = items.Read(j.Layout().Items, func(it *items.Item) (bool, error) {
		total++
		if it.ID == arg {
			byID = it
			return false, nil
		}
		if it.Index == index {
			byIndex = it
		}
		return true, nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usagef("job %s has no items: its map input was never loaded", j.Meta.ID)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case byID != nil:
		return byID, nil
	case byIndex != nil:
		return byIndex, nil
	}
	return nil, usagef("job %s has no item %q (an item id, or an index from 0 to %d)", j.Meta.ID, arg, total-1)
}

// logPrinter copies a step's or an item's log to w, only the sections of
// one attempt when attempt is not 0. It writes through a buffer, flushed at the end
// of each copy: a log of a million lines costs a few hundred writes, not
// one a line.
type logPrinter struct {
	w       *bufio.Writer
	attempt int  // 0: every attempt
	current int  // the attempt of the section being copied (1 before any header: an older runner's first attempt)
	printed bool // something was written
}

func newLogPrinter(w io.Writer, attempt int) *logPrinter {
	return &logPrinter{w: bufio.NewWriterSize(w, 256<<10), attempt: attempt, current: 1}
}

// copyFrom copies the log at path from offset to w, line by line, and
// returns the offset after what it copied: the end of the last whole line,
// or the end of the file when all is set. A log that is not there yet
// copies nothing.
func (p *logPrinter) copyFrom(path string, offset int64, all bool) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return offset, nil
	}
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	if p.attempt == 0 && all {
		// Every section, to the end: the bytes as they are, through the
		// kernel's copy where the output is a file.
		n, cerr := io.Copy(p.w, f)
		p.printed = p.printed || n > 0
		offset, err = offset+n, cerr
	} else {
		offset, err = p.copyLines(bufio.NewReaderSize(f, 256<<10), offset, all)
	}
	if ferr := p.w.Flush(); err == nil {
		err = ferr
	}
	return offset, err
}

// copyLines copies the lines r holds, as copyFrom says, r being at offset.
func (p *logPrinter) copyLines(r *bufio.Reader, offset int64, all bool) (int64, error) {
	var pending []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: held until its end, as a
			// cut line is not copied until it is whole.
			pending = append(pending, chunk...)
			continue
		}
		if pending != nil {
			chunk = append(pending, chunk...)
			pending = nil
		}
		if err == nil || (all && len(chunk) > 0) {
			p.line(chunk)
			offset += int64(len(chunk))
		}
		if errors.Is(err, io.EOF) {
			return offset, nil
		}
		if err != nil {
			return offset, err
		}
	}
}

// line writes one line of a log if its section is shown.
func (p *logPrinter) line(line []byte) {
	if attemptlog.MayBeHeader(line) {
		if h, ok := attemptlog.ParseHeader(strings.TrimSuffix(string(line), "\n")); ok {
			p.current = h.Attempt
		}
	}
	if p.attempt == 0 || p.current == p.attempt {
		p.w.Write(line)
		p.printed = true
	}
}

// sayNothing tells on w that the log of what ("item ID", "step LABEL")
// held nothing to show.
func (p *logPrinter) sayNothing(w io.Writer, what string) {
	if p.attempt > 0 {
		fmt.Fprintf(w, "%s: no output from an attempt %d\n", what, p.attempt)
		return
	}
	fmt.Fprintf(w, "%s has printed nothing\n", what)
}

// followLog copies the log at path as it grows, until the job's
// current run ends or its process is gone (as `runner events --follow`
// decides), then what the log holds at that end.
func followLog(ctx context.Context, g *globalOptions, j *state.Job, path string, out *logPrinter) error {
	w := &runWatch{job: j}
	var offset int64
	err := eventlog.Follow(ctx, j.Layout().Events, eventlog.Query{}, func(eventlog.Event) error { return nil }, eventlog.Until{
		See: w.see,
		Done: func() (bool, error) {
			stop, err := w.done()
			var cerr error
			offset, cerr = out.copyFrom(path, offset, stop)
			return stop, errors.Join(err, cerr)
		},
	})
	if err == nil && w.gone {
		fmt.Fprintf(g.stderr, "job %s: the process running it is gone; resume with: runner resume %s\n", j.Meta.ID, j.Meta.ID)
	}
	return err
}

// itemLog is an item that printed something, and the size of its logs.
type itemLog struct {
	id    string
	index int
	size  int64
}

// itemLogs returns the job's items that have a log, in input order.
func itemLogs(j *state.Job) ([]itemLog, error) {
	layout := j.Layout()
	sizes := map[string]int64{}
	for _, dir := range []string{layout.ItemLogs, layout.Logs} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				sizes[filepath.Join(dir, e.Name())] = info.Size()
			}
		}
	}
	var out []itemLog
	if len(sizes) == 0 {
		return nil, nil
	}
	err := items.Read(j.Layout().Items, func(it *items.Item) (bool, error) {
		size, ok := sizes[layout.ItemLog(it.ID)]
		legacy, lok := sizes[layout.LegacyItemLog(it.Index)]
		if ok || lok {
			out = append(out, itemLog{id: it.ID, index: it.Index, size: size + legacy})
		}
		return true, nil
	})
	return out, err
}

// listLogs prints the job's steps that have a log, then, for a MapReduce
// job, its items that have one.
func listLogs(g *globalOptions, j *state.Job, mapReduce bool) error {
	steps, err := stepLogs(j)
	if err != nil {
		return err
	}
	if len(steps) > 0 {
		t := newTable(g.stdout)
		t.row("STEP", "LOG", "BYTES")
		for _, s := range steps {
			t.row(s.label, strings.TrimSuffix(state.StepLogName(s.phase, s.index), ".log"), s.size)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if !mapReduce {
		if len(steps) == 0 {
			fmt.Fprintf(g.stderr, "no step of job %s has printed anything\n", j.Meta.ID)
			return nil
		}
		fmt.Fprintf(g.stderr, "show one with: runner logs %s STEP\n", j.Meta.ID)
		return nil
	}
	if len(steps) > 0 {
		fmt.Fprintf(g.stderr, "show a step's with: runner logs %s --step STEP\n", j.Meta.ID)
	}
	return listItemLogs(g, j)
}

// listItemLogs prints the job's items that have a log.
func listItemLogs(g *globalOptions, j *state.Job) error {
	logs, err := itemLogs(j)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		fmt.Fprintf(g.stderr, "no item of job %s has printed anything\n", j.Meta.ID)
		return nil
	}
	t := newTable(g.stdout)
	t.row("ITEM", "INDEX", "BYTES")
	for _, l := range logs {
		t.row(l.id, l.index, l.size)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "show one with: runner logs %s ITEM\n", j.Meta.ID)
	return nil
}

// completeLogs returns what the second argument of runner logs can be
// for the job arg names, starting with prefix: the items that have a log
// (a MapReduce job), or the steps that have one (a standard workflow).
func completeLogs(g *globalOptions, arg, prefix string) []cobra.Completion {
	id, err := g.store().Find(arg)
	if err != nil {
		return nil
	}
	j, err := g.store().Open(id)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	if j.Meta.Mode != string(workflow.MapReduce) {
		steps, _ := stepLogs(j)
		for _, s := range steps {
			if strings.HasPrefix(s.label, prefix) {
				out = append(out, cobra.CompletionWithDesc(s.label, fmt.Sprintf("%d bytes", s.size)))
			}
		}
		return out
	}
	logs, _ := itemLogs(j)
	for _, l := range logs {
		if strings.HasPrefix(l.id, prefix) {
			out = append(out, cobra.CompletionWithDesc(l.id, fmt.Sprintf("index %d, %d bytes", l.index, l.size)))
		}
	}
	return out
}
