//go:build runner_crashpoints

package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	mu     sync.Mutex
	hits   = map[string]int{}
	target = os.Getenv("RUNNER_CRASHPOINT")
)

// Hit kills this process with SIGKILL at the Nth hit of the point that
// RUNNER_CRASHPOINT names ("name" or "name:N"; N is 1 when left out).
func Hit(name string) {
	want, n, _ := strings.Cut(target, ":")
	if want != name {
		return
	}
	nth, err := strconv.Atoi(n)
	if err != nil {
		nth = 1
	}
	mu.Lock() // held until the end: no other point passes meanwhile
	hits[name]++
	if hits[name] < nth {
		mu.Unlock()
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not delivered at once
}
