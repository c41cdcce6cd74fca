package dlq_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runnerdev/runner/dlq"
)

// tempQueue returns the path of a queue file in a new temporary directory
// and a function that deletes the directory.
func tempQueue() (path string, cleanup func()) {
	dir, err := os.MkdirTemp("", "dlq-example")
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "job.db"), func() { os.RemoveAll(dir) }
}

// A job records each failure of an item through a Writer; the queue keeps
// one entry per item with its whole history. Readers such as `runner dlq
// list` and `runner dlq show` open the file for one look and close it
// again, and `runner dlq retry` removes an item once it succeeds.
func Example() {
	path, cleanup := tempQueue()
	defer cleanup()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	err := dlq.NewWriter(path, dlq.Options{}).Add(
		dlq.Entry{JobID: "job-1", ItemID: "a", Item: []byte(`{"file":"a.json"}`),
			Failure: dlq.Failure{At: at, Kind: "exit", ExitCode: 1, Message: "open /data/a.json: no such file"}},
		dlq.Entry{JobID: "job-1", ItemID: "b", ItemIndex: 1, Item: []byte(`"b.json"`),
			Failure: dlq.Failure{At: at, Kind: "timeout", ExitCode: -1, Message: "timed out after 30s"}},
		dlq.Entry{JobID: "job-1", ItemID: "a", Item: []byte(`{"file":"a.json"}`),
			Failure: dlq.Failure{At: at.Add(time.Minute), Kind: "exit", ExitCode: 1, Message: "open /data/a.json: permission denied"}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	r, err := dlq.Open(path, dlq.Options{ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	r.List(func(it dlq.Item) bool {
		fmt.Printf("%s: failures %d, last %q\n", it.ItemID, it.FailureCount, it.ErrorSignature)
		return true
	})
	it, _ := r.Get("a")
	for _, f := range it.Failures {
		fmt.Printf("a, attempt %d at %s: %s\n", f.Attempt, f.At.Format(time.TimeOnly), f.Message)
	}
	r.Close()

	d, err := dlq.Open(path, dlq.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	removed, _ := d.Remove("a")
	left, _ := d.Count()
	fmt.Println("removed", removed, "left", left)
	// Output:
	// a: failures 2, last "open PATH: permission denied"
	// b: failures 1, last "timed out after Ns"
	// a, attempt 1 at 03:04:05: open /data/a.json: no such file
	// a, attempt 2 at 03:05:05: open /data/a.json: permission denied
	// removed 1 left 1
}

// Two `runner dlq retry` processes claim from the same queue: an item
// leased to one is not given to the other until the lease ends.
func ExampleDB_Claim() {
	path, cleanup := tempQueue()
	defer cleanup()
	d, err := dlq.Open(path, dlq.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	failed := dlq.Failure{Kind: "exit", ExitCode: 1, Message: "exit status 1"}
	if err := d.Add(dlq.Entry{ItemID: "a", Failure: failed}, dlq.Entry{ItemID: "b", Failure: failed}); err != nil {
		fmt.Println(err)
		return
	}
	until := time.Now().Add(time.Minute)
	first, _ := d.Claim("retry-1", until, "a")
	second, _ := d.Claim("retry-2", until, "a", "b")
	fmt.Println(first, second)
	d.Release("retry-1", "a")
	third, _ := d.Claim("retry-2", until, "a")
	fmt.Println(third)
	// Output:
	// [a] [b]
	// [a]
}

// Failures of "the same" error share a signature, whatever the paths and
// numbers in their messages.
func ExampleSignature() {
	fmt.Println(dlq.Signature("open /tmp/a/b.json: no such file"))
	fmt.Println(dlq.Signature("open /var/x.json: no such file"))
	fmt.Println(dlq.Signature("cannot decode huge.tiff: bad header", dlq.ItemStrings("7", "huge.tiff")...))
	// Output:
	// open PATH: no such file
	// open PATH: no such file
	// cannot decode ITEM: bad header
}
