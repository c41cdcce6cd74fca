package testkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseScale(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		bad  bool
	}{
		{in: "", want: 1},
		{in: "1", want: 1},
		{in: "2.5", want: 2.5},
		{in: "1e3", want: 1000},
		{in: "0.5", bad: true},
		{in: "0", bad: true},
		{in: "-2", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "3x", bad: true},
	} {
		got, err := parseScale(tt.in)
		if (err != nil) != tt.bad || !tt.bad && got != tt.want {
			t.Errorf("parseScale(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestScaled(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		f    float64
		want string
	}{
		{200 * time.Millisecond, 1, "200ms"},
		{200 * time.Millisecond, 2.5, "500ms"},
		{time.Second, 1.3333, "1.333s"},
		{time.Minute, 3, "3m0s"},
		{10 * time.Microsecond, 2, "20µs"},
	} {
		if got := scaled(tt.d, tt.f).String(); got != tt.want {
			t.Errorf("scaled(%v, %v) = %s, want %s", tt.d, tt.f, got, tt.want)
		}
	}
}

// TestEventually: a condition that comes true after a few polls passes,
// asked again until it does.
func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, func() bool { calls++; return calls == 3 }, "the third call")
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

// TestScaleReadsTheEnvironment runs this test binary again with the
// scale set: its Scale multiplies by it, and a scale that is no number of
// at least 1 fails the tests instead of passing for 1.
func TestScaleReadsTheEnvironment(t *testing.T) {
	if os.Getenv("TESTKIT_CHILD") != "" {
		if got := Scale(time.Second); got != 3*time.Second {
			t.Fatalf("Scale(1s) = %v with %s=%s", got, ScaleEnv, os.Getenv(ScaleEnv))
		}
		return
	}
	for value, ok := range map[string]bool{"3": true, "three": false} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScaleReadsTheEnvironment$")
		cmd.Env = append(os.Environ(), "TESTKIT_CHILD=1", ScaleEnv+"="+value)
		out, err := cmd.CombinedOutput()
		if (err == nil) != ok {
			t.Errorf("%s=%s: %v\n%s", ScaleEnv, value, err, out)
		}
	}
}

// GitRepo's repository is on main with one commit of its files, made by
// the test identity.
func TestGitRepo(t *testing.T) {
	r := GitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if got := r.Git("log", "--format=%an %s", "main"); got != "t base" {
		t.Errorf("main's log = %q", got)
	}
	if got := r.Git("ls-files"); got != "a.txt\nb.txt" {
		t.Errorf("files = %q", got)
	}
	if got := r.In(t.TempDir(), "init", "-q"); got != "" {
		t.Errorf("git init elsewhere said %q", got)
	}
}

// BoundHeap ends the test binary once the heap passes its bound: the
// test runs itself again as a child that allocates past it.
func TestBoundHeap(t *testing.T) {
	if os.Getenv("TESTKIT_BOUND_HEAP") == "1" {
		BoundHeap(t, 32<<20)
		var held [][]byte
		for range 1000 {
			held = append(held, make([]byte, 1<<20))
			time.Sleep(100 * time.Microsecond)
		}
		t.Logf("held %d MiB", len(held))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoundHeap$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTKIT_BOUND_HEAP=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TestBoundHeap: the heap holds") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
