package natsworker

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// goroutineID is the number of the goroutine calling it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// Functions run one after another run on the same goroutines, which end
// with stop.
func TestReusedGoroutinesRunOneAfterAnother(t *testing.T) {
	g := newReusedGoroutines(time.Minute)
	ids := map[string]bool{}
	const runs = 100
	for range runs {
		done := make(chan string)
		g.run(func() { done <- goroutineID() })
		ids[<-done] = true
		time.Sleep(time.Millisecond) // its goroutine waits for the next
	}
	if len(ids) > runs/2 {
		t.Errorf("%d functions run one after another ran on %d goroutines, want few", runs, len(ids))
	}
	g.stop()
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "(*reusedGoroutines).serve") {
		t.Errorf("goroutines run on after stop:\n%s", stacks)
	}
}

// A goroutine that waited idle for work ends.
func TestReusedGoroutineEndsWhenIdle(t *testing.T) {
	g := newReusedGoroutines(time.Millisecond)
	g.run(func() {})
	ended := make(chan struct{})
	go func() { g.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("an idle goroutine did not end within 10 s")
	}
	g.stop()
}
