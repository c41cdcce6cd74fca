package natsworker

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A worker's watchdog is a process of its own that kills the process
// groups of the worker's items when their lease runs out: the worker
// renews a run's leases with each heartbeat the server answers, so a
// worker that is frozen (SIGSTOP, a suspended machine) or dead cannot
// leave an item running once the server may have given its task to
// another worker. The worker writes one line per change on the
// watchdog's stdin:
//
//	lease PGID UNTIL_UNIX_NANO
//	free PGID
//
// and closes it when it ends; the watchdog then kills every group still
// leased (the worker died) and exits.
//
// Before it kills a group, the watchdog marks it: an empty file named
// after the group's id in the worker's marks directory. The mark is there
// before the group dies, so the worker, once it has seen the group end,
// knows for certain whether its watchdog killed it (watchdog.killed),
// whatever heartbeat answer renewed its lease meanwhile: the run was cut
// off, as the watchdog acted on a lease the server may have let run out.

// ServeWatchdog is the watchdog: it reads leases from in until it ends,
// marking in marks each group it kills. Its process should ignore SIGINT,
// SIGTERM and SIGHUP (IgnoreSignals): it ends when the worker does.
func ServeWatchdog(in io.Reader, marks string) error {
	type change struct {
		pgid  int
		until time.Time // zero: freed
	}
	changes := make(chan change)
	var bad error // read once changes is closed
	go func() {
		defer close(changes)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			var c change
			var until int64
			if n, _ := fmt.Sscanf(sc.Text(), "lease %d %d", &c.pgid, &until); n == 2 {
				c.until = time.Unix(0, until)
			} else if n, _ := fmt.Sscanf(sc.Text(), "free %d", &c.pgid); n != 1 {
				bad = fmt.Errorf("watchdog: unreadable line %q", sc.Text())
				return
			}
			changes <- c
		}
	}()
	leases := map[int]time.Time{}
	// A timer set for the earliest lease, not a ticker: a worker whose
	// items renew their leases wakes its watchdog only with news.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				for pgid := range leases {
					kill(marks, pgid)
				}
				return bad
			}
			if c.until.IsZero() {
				delete(leases, c.pgid)
			} else {
				leases[c.pgid] = c.until
			}
		case now := <-timer.C:
			for pgid, until := range leases {
				if !now.Before(until) {
					kill(marks, pgid)
					delete(leases, pgid)
				}
			}
		}
		timer.Stop()
		if len(leases) > 0 {
			timer.Reset(time.Until(slices.MinFunc(slices.Collect(maps.Values(leases)), time.Time.Compare)))
		}
	}
}

// kill marks process group pgid in marks, then kills it.
func kill(marks string, pgid int) {
	if f, err := os.Create(markPath(marks, pgid)); err == nil {
		f.Close()
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func markPath(marks string, pgid int) string { return filepath.Join(marks, strconv.Itoa(pgid)) }

// IgnoreSignals makes the watchdog's process ignore the signals a
// terminal sends to a whole process group, or that stop the worker: the
// end of its input is what ends it.
func IgnoreSignals() { signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP) }

// watchdog is the worker's side: the process, the pipe to it and the
// directory of its marks. A watchdog that cannot be written to any more
// (it died) is ignored: the worker's own heartbeat check still stops its
// runs.
type watchdog struct {
	mu    sync.Mutex
	in    io.WriteCloser
	cmd   *exec.Cmd
	marks string
}

// startWatchdog starts argv (this executable's watchdog command) with
// marks, a directory it makes, as its last argument, as the worker's
// watchdog, in a process group of its own.
func startWatchdog(argv []string, marks string) (*watchdog, error) {
	if err := os.MkdirAll(marks, 0o700); err != nil {
		return nil, fmt.Errorf("the worker's watchdog: %w", err)
	}
	cmd := exec.Command(argv[0], append(slices.Clone(argv[1:]), marks)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the worker's watchdog: %w", err)
	}
	return &watchdog{in: in, cmd: cmd, marks: marks}, nil
}

func (w *watchdog) lease(pgid int, until time.Time) {
	w.write(fmt.Sprintf("lease %d %d\n", pgid, until.UnixNano()))
}

func (w *watchdog) free(pgid int) { w.write(fmt.Sprintf("free %d\n", pgid)) }

// killed reports whether the watchdog killed group pgid, which has ended,
// and forgets it: a later group may have its id. Marks are read without
// the pipe's lock: the watchdog makes them of its own accord.
func (w *watchdog) killed(pgid int) bool {
	if w == nil {
		return false
	}
	return os.Remove(markPath(w.marks, pgid)) == nil
}

func (w *watchdog) write(line string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = io.WriteString(w.in, line)
}

// close ends the watchdog (nothing is leased any more) and waits for it.
func (w *watchdog) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	_ = w.in.Close()
	w.mu.Unlock()
	_ = w.cmd.Wait()
}
