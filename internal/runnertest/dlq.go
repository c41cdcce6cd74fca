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

// dlqhold FILE SECONDS holds the DLQ file FILE open (and so locked) for
// SECONDS, as another process would; FILE.held appears once it holds it.
func dlqHold() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: dlqhold FILE SECONDS")
		os.Exit(2)
	}
	secs, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dlqhold:", err)
		os.Exit(2)
	}
	d, err := dlq.Open(os.Args[1], dlq.Options{Timeout: testkit.Scale(10 * time.Second)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dlqhold:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1]+".held", nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "dlqhold:", err)
		os.Exit(1)
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
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
