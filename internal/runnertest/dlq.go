package runnertest

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/testkit"
)

// dlqhold FILE SECONDS|release opens the DLQ file FILE (taking its lock),
// creates FILE.held and holds the file for SECONDS, or with "release"
// until FILE.release exists (a handshake: a script that asserts what
// another process sees while the file is held must not race a timer).
func dlqHold() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: dlqhold FILE SECONDS|release")
		os.Exit(2)
	}
	file, hold := os.Args[1], os.Args[2]
	var held func()
	if hold == "release" {
		held = func() {
			testkit.Poll(func() bool { _, err := os.Stat(file + ".release"); return err == nil })
		}
	} else {
		secs, err := strconv.ParseFloat(hold, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dlqhold:", err)
			os.Exit(2)
		}
		held = func() { time.Sleep(time.Duration(secs * float64(time.Second))) }
	}
	d, err := dlq.Open(file, dlq.Options{Timeout: testkit.Scale(10 * time.Second)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dlqhold:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(file+".held", nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "dlqhold:", err)
		os.Exit(1)
	}
	held()
	d.Close()
}

// dlqlease [-reused] FILE leases every item of the DLQ file FILE for a day
// (replacing any lease) to this (test) process, named as `dlq retry` names itself: host, pid and
// start time. With -reused the start time is another one, as if the pid
// now belonged to a new process.
func dlqLease(ts *testscript.TestScript, neg bool, args []string) {
	reused := len(args) == 2 && args[0] == "-reused"
	if reused {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: dlqlease [-reused] FILE")
	}
	start, ok := proc.StartTime(os.Getpid())
	if !ok {
		ts.Fatalf("dlqlease: no start time for pid %d", os.Getpid())
	}
	if reused {
		start++
	}
	host, _ := os.Hostname()
	d, err := dlq.Open(ts.MkAbs(args[0]), dlq.Options{Gone: func(string) bool { return true }})
	ts.Check(err)
	defer d.Close()
	var ids []string
	ts.Check(d.List(func(it dlq.Item) bool { ids = append(ids, it.ItemID); return true }))
	got, err := d.Claim(fmt.Sprintf("%s:%d:%d", host, os.Getpid(), start), time.Now().Add(24*time.Hour), ids...)
	ts.Check(err)
	if len(got) != len(ids) {
		ts.Fatalf("dlqlease: claimed %d of %d items", len(got), len(ids))
	}
}
