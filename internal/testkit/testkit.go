// Package testkit is what runner's tests share about time: the scale of
// every bound a test puts on a wait, and of every timeout it sets to make
// something happen quickly, read from RUNNER_TEST_TIMEOUT_SCALE (a number
// of at least 1; 1 when unset) so that a loaded machine can give them
// more; and Eventually and Poll, a wait for a condition with a scaled
// bound instead of a fixed sleep. No test asserts that something took
// less than a wall-clock bound: what must be fast is a benchmark. Only
// tests import it.
//
//	res := proc.Run(ctx, proc.Spec{Command: "sleep 300", Timeout: testkit.Scale(200 * time.Millisecond)})
//	testkit.Eventually(t, func() bool { return exists(path) }, "the pid file")
package testkit

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// ScaleEnv names the environment variable that scales the tests' bounds
// and short timeouts: a number of at least 1 (more time, never less), 1
// when unset or empty.
const ScaleEnv = "RUNNER_TEST_TIMEOUT_SCALE"

// Wait bounds a poll before the scale: a handshake, not a timing. It only
// keeps a broken test from hanging, far beyond what any condition waited
// on takes on a machine loaded many times over.
const Wait = time.Minute

// factor is the scale, read once; a value that is not a number of at
// least 1 panics, so that a mistyped scale never passes for 1.
var factor = sync.OnceValue(func() float64 {
	f, err := parseScale(os.Getenv(ScaleEnv))
	if err != nil {
		panic(err)
	}
	return f
})

// parseScale reads the value of ScaleEnv.
func parseScale(s string) (float64, error) {
	if s == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 1) || f > 1e6 {
		return 0, fmt.Errorf("testkit: %s=%q: want a number of at least 1, such as 2.5", ScaleEnv, s)
	}
	return f, nil
}

// Scale returns d times the scale, rounded to the millisecond when it is
// longer than one, so that a timeout's value reads as written ("500ms").
func Scale(d time.Duration) time.Duration {
	return scaled(d, factor())
}

func scaled(d time.Duration, f float64) time.Duration {
	s := time.Duration(float64(d) * f)
	if s > time.Millisecond {
		s = s.Round(time.Millisecond)
	}
	return s
}

// Poll reports whether cond held within Scale(Wait), asking it every
// 10 ms.
func Poll(cond func() bool) bool {
	for end := time.Now().Add(Scale(Wait)); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return cond()
		}
	}
}

// Eventually waits until cond holds, and fails the test when it does not
// within Scale(Wait); what says what was waited for.
func Eventually(t testing.TB, cond func() bool, what string) {
	t.Helper()
	if !Poll(cond) {
		t.Fatalf("%s: not within %v", what, Scale(Wait))
	}
}
