package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// The job's secrets reach its agents in their environment only: given with
// --set alone (not in runner's environment), the agents have it in theirs,
// not on their command line, and no file of the job holds it. Linux only:
// it reads /proc.
func TestAgentSecretsInEnvironmentOnly(t *testing.T) {
	needProc(t)
	t.Setenv("RUNNER_DISPATCH", "agents")
	t.Setenv("GORACE", runnertest.RaceNoExitSleep())
	const secret = "tok-3f9a-agent"
	dir := t.TempDir()
	wf := `name: s
mode: mapreduce
map:
  input: items.txt
  max_parallel: 2
  agent_template:
    - shell: |
        tr '\0' ' ' < /proc/$PPID/cmdline > cmdline.${item}
        tr '\0' '\n' < /proc/$PPID/environ | grep '^API_TOKEN=' > environ.${item}
`
	if err := os.WriteFile(filepath.Join(dir, "s.yml"), []byte(wf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.txt"), []byte("1\n2\n3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runnerIn(t, dir, "run", "--job-id", "j", "--set", "API_TOKEN="+secret, "s.yml"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	for _, item := range []string{"1", "2", "3"} {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline."+item))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cmdline), " agent ") || strings.Contains(string(cmdline), secret) {
			t.Errorf("item %s ran under %q, want an agent without the secret on its command line", item, cmdline)
		}
		if env, _ := os.ReadFile(filepath.Join(dir, "environ."+item)); string(env) != "API_TOKEN="+secret+"\n" {
			t.Errorf("item %s: the agent's environment has %q, want the secret", item, env)
		}
	}
	filepath.WalkDir(filepath.Join(dir, ".runner"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the secret", path)
			}
		}
		return nil
	})
}

// stopWorkflow's one item runs a command that waits until the file go-on
// exists, after it wrote its agent's pid to agent.pid and its own to
// step.pid (last, as the sign that both are there).
const stopWorkflow = `name: stop
mode: mapreduce
map:
  input: items.txt
  agent_template:
    - shell: |
        [ -f go-on ] && exit 0
        echo $PPID > agent.pid
        echo $$ > step.pid.tmp && mv step.pid.tmp step.pid
        exec sleep 300
`

// An agent stops its task's commands and exits when runner dies (kill -9:
// the agent's input ends) or when it is told to (SIGTERM); in the second
// case runner, which lives on, sends the item again. Linux only: it tells
// zombies from live processes in /proc.
func TestAgentStopsItsCommands(t *testing.T) {
	needProc(t)
	t.Setenv("RUNNER_DISPATCH", "agents")
	t.Setenv("GORACE", runnertest.RaceNoExitSleep())
	for _, tc := range []struct {
		name string
		kill func(runner, agent int)
	}{
		{"runner killed", func(runner, _ int) { syscall.Kill(runner, syscall.SIGKILL) }},
		{"agent terminated", func(_, agent int) { syscall.Kill(agent, syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "stop.yml"), []byte(stopWorkflow), 0o600)
			os.WriteFile(filepath.Join(dir, "items.txt"), []byte("1\n"), 0o600)
			run := exec.Command("runner", "run", "--job-id", "j", "stop.yml")
			run.Dir = dir
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- run.Wait() }()
			step, agent := readPID(t, filepath.Join(dir, "step.pid")), readPID(t, filepath.Join(dir, "agent.pid"))
			os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o600)
			tc.kill(run.Process.Pid, agent)
			waitGone(t, step, "the step's command")
			waitGone(t, agent, "the agent")
			select {
			case err := <-exited:
				if tc.name == "agent terminated" && err != nil {
					t.Errorf("runner: %v, want the item sent again and run to success", err)
				}
			case <-time.After(testkit.Scale(time.Minute)): // a bound, not a timing
				run.Process.Kill()
				t.Fatal("runner did not end")
			}
		})
	}
}

// readPID waits (a bounded handshake) for a pid file and reads it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(time.Minute)); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
	}
	t.Fatalf("%s did not appear within a minute", path)
	return 0
}

// waitGone waits (at most 30 s: the agent gives its commands a grace
// period after TERM) for a process to end; a zombie has ended.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(30 * time.Second)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || procState(pid) == 'Z' {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("%s (pid %d) still runs", what, pid)
}

// needProc skips a test that reads /proc where there is none.
func needProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
}

// killBusyAgent kills -9 one of the coordinator's `runner agent` processes
// in the middle of a step, and checks that the coordinator sends the
// agent's item again (an item_started event of it, resumed). The agent is
// stopped (SIGSTOP) while it is looked at, so that a step seen running
// cannot end, nor the agent answer its task, before the kill. It returns
// false when the coordinator exited before an agent was seen running a
// step. Linux only: it reads /proc.
func killBusyAgent(t *testing.T, store state.Store, coordinator int, exited <-chan struct{}) bool {
	t.Helper()
	// A bound on a handshake, not a timing: agents run steps all through
	// a round.
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); {
		for _, pid := range childrenOf(coordinator) {
			if !isAgent(pid) {
				continue
			}
			item, ok := stopBusy(pid)
			if !ok {
				continue
			}
			sent := resumedStarts(t, store, item)
			syscall.Kill(pid, syscall.SIGKILL)
			waitResent(t, store, item, sent, exited)
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	t.Log("no agent was seen running a step")
	return false
}

// stopBusy stops the agent pid and returns the item of the step it is
// running; when it runs none, it lets it go on and returns false.
func stopBusy(pid int) (item string, ok bool) {
	if syscall.Kill(pid, syscall.SIGSTOP) != nil {
		return "", false
	}
	for deadline := time.Now().Add(testkit.Scale(5 * time.Second)); procState(pid) != 'T' && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the stop is delivered asynchronously
	}
	for _, child := range childrenOf(pid) {
		if item, ok = envOf(child, "RUNNER_ITEM_ID"); ok {
			return item, true
		}
	}
	syscall.Kill(pid, syscall.SIGCONT)
	return "", false
}

// waitResent waits (at most 10 s, or until the coordinator exits) for the
// item to be sent again after a kill: more than sent resumed starts.
func waitResent(t *testing.T, store state.Store, item string, sent int, exited <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); {
		if resumedStarts(t, store, item) > sent {
			return
		}
		select {
		case <-exited:
			if resumedStarts(t, store, item) > sent {
				return
			}
			t.Errorf("the coordinator exited without sending item %s of the killed agent again", item)
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Errorf("item %s of the killed agent was not sent again within 10s", item)
}

// resumedStarts counts the item_started events of job j's item that go on
// with an attempt already begun (after a crash or a lost runner).
func resumedStarts(t *testing.T, store state.Store, item string) int {
	t.Helper()
	n := 0
	for _, line := range readLines(t, store.Layout("j").Events) {
		var e struct {
			Type    string `json:"type"`
			ItemID  string `json:"item_id"`
			Resumed bool   `json:"resumed"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "item_started" && e.ItemID == item && e.Resumed {
			n++
		}
	}
	return n
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat := procStat(child); len(stat) > 1 && stat[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// procState is the state letter of a process ('T': stopped), or 0.
func procState(pid int) byte {
	if stat := procStat(pid); len(stat) > 0 && stat[0] != "" {
		return stat[0][0]
	}
	return 0
}

// procStat returns the fields of /proc/PID/stat after the command name:
// state, parent pid, ...
func procStat(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	_, rest, ok := bytes.Cut(data, []byte(") ")) // the name is in parentheses
	if !ok {
		return nil
	}
	return strings.Fields(string(rest))
}

// isAgent reports whether pid runs `runner agent`.
func isAgent(pid int) bool {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	args := strings.Split(string(data), "\x00")
	return len(args) > 1 && args[1] == "agent"
}

// envOf returns a variable of a process's environment.
func envOf(pid int, name string) (string, bool) {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	for kv := range strings.SplitSeq(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
