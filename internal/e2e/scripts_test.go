package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natscoord"
	"github.com/runnerdev/runner/internal/runnertest"
)

// TestScriptsAgents runs the scripts that run map items again with the
// items in `runner agent` processes (RUNNER_DISPATCH=agents), which must
// change nothing they check.
func TestScriptsAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the script dispatch_agents runs agents; the full suite runs the map scripts with them")
	}
	t.Parallel()
	p := withSetup(runnertest.ScriptParams(), func(env *testscript.Env) error {
		env.Setenv("RUNNER_DISPATCH", "agents")
		return nil
	})
	p.Files = scriptFiles(t, agentScripts)
	testscript.Run(t, p)
}

// scriptFiles are the files of the scripts of testdata/script named.
func scriptFiles(t *testing.T, names []string) []string {
	var files []string
	for _, name := range names {
		files = append(files, repoPath(t, "testdata", "script", name+".txtar"))
	}
	return files
}

// withSetup is p with more setup after its own.
func withSetup(p testscript.Params, more func(env *testscript.Env) error) testscript.Params {
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		return more(env)
	}
	return p
}

// agentScripts are the scripts that run map items (a MapReduce job or a
// dlq retry), but for dry_run and validate_errors, which run none, and
// dlq_retry_sighup, whose step signals its parent process as runner: with
// agents that is its agent, which it kills, so the item's runner is lost
// instead of the retry interrupted.
var agentScripts = []string{
	"breaker_kills", "dlq_commands", "dlq_concurrent_retry", "dlq_damaged_empty", "dlq_filter_fields",
	"dlq_locked_job_waits", "dlq_purge_during_retry", "dlq_purge_events", "dlq_retry_counts", "dlq_retry_crash",
	"dlq_retry_held", "dlq_retry_pid_reused", "dlq_retry_summary_write_error", "dlq_signature_item",
	"dlq_stats_damaged_job", "junit", "mapreduce_breaker", "mapreduce_breaker_probe", "mapreduce_collection",
	"mapreduce_concurrency", "mapreduce_dlq", "mapreduce_features", "mapreduce_hostile", "mapreduce_policy",
	"mapreduce_raw_bytes", "mapreduce_resume", "mapreduce_resume_item_retry", "mapreduce_resume_steps",
	"mapreduce_state", "mapreduce_value_ids", "nested_default", "prodigy_mapreduce", "progress",
	"progress_counts", "secrets", "secrets_not_stored", "isolation_worktree", "isolation_worktree_layout", "isolation_resume", "isolation_resume_merged",
	"isolation_dlq_retry", "isolation_dlq_retry_merged", "isolation_merged_in_dlq", "dlq_retry_then_merge",
	"agent_worktree", "report_kinds", "map_shared_checkout", "isolation_branch_names", "isolation_branch_names_legacy",
	"jobs_housekeeping", "jobs_housekeeping_killed",
	"commit_required",
	"isolation_merge", "prodigy_validate", "prodigy_environment", "fix_loop_counts", "map_zero_items", "resume_dlq_hint",
	"prodigy_output", "results_prodigy_shape", "documented_variables", "string_lists", "logs_items", "tag_output",
	"tag_output_results", "claude_stream", "claude_stream_log", "budget_job", "budget_item", "budget_hard",
}

// TestNATSScripts runs the scripts that run map items again with the items
// on NATS workers (§11.9.1): each script gets a JetStream server and two
// `runner worker` processes in its directory, and RUNNER_NATS, so that
// every run, resume and dlq retry in it sends its items there. What the
// scripts check (exit codes, counts, the DLQ, results, events, reports)
// must not change.
func TestNATSScripts(t *testing.T) {
	skipNATSProcesses(t, "runs the MapReduce scripts on workers")
	t.Parallel()
	p := withSetup(runnertest.ScriptParams(), func(env *testscript.Env) error {
		return startScriptNATS(env, func(string) (string, error) { return env.WorkDir, nil })
	})
	p.Files = scriptFiles(t, natsScripts(t))
	testscript.Run(t, p)
}

// natsProdigyScripts are the scripts of testdata/prodigy whose Prodigy
// files run `claude:` steps in map items (in worktrees).
var natsProdigyScripts = []string{
	"workflows_book-docs-drift", "workflows_debtmap-reduce", "workflows_documentation-drift-mapreduce",
	"workflows_mapreduce-env-example", "workflows_mapreduce-example", "workflows_mkdocs-drift",
}

// TestNATSProdigyScripts runs the scripts of Prodigy's files whose map
// items run claude: steps in worktrees with the items on NATS workers
// (RUNNER_NATS), two of them, each in a clone of the script's repository
// of its own: the commits travel through the job's git bucket, and what
// the scripts check must not change.
func TestNATSProdigyScripts(t *testing.T) {
	skipNATSProcesses(t, "runs Prodigy's agent files on workers")
	t.Parallel()
	dir := prodigyExamples(t)
	scriptDir := repoPath(t, "testdata", "prodigy")
	p := withSetup(runnertest.ScriptParams(), func(env *testscript.Env) error {
		if err := prodigySetup(env, dir, scriptDir); err != nil {
			return err
		}
		return startScriptNATS(env, func(name string) (string, error) {
			clone := filepath.Join(env.WorkDir, "clone-"+name)
			if out, err := exec.Command("git", "clone", "-q", filepath.Join(env.WorkDir, "repo"), clone).CombinedOutput(); err != nil {
				return "", fmt.Errorf("git clone: %v: %s", err, out)
			}
			return clone, nil
		})
	})
	for _, name := range natsProdigyScripts {
		p.Files = append(p.Files, filepath.Join(scriptDir, name+".txtar"))
	}
	testscript.Run(t, p)
}

// startScriptNATS gives a script a JetStream server (RUNNER_NATS) and two
// workers, each in the directory workDir gives for its name.
func startScriptNATS(env *testscript.Env, workDir func(name string) (string, error)) error {
	url, stop, err := runnertest.NATSServer()
	if err != nil {
		return err
	}
	env.Defer(stop)
	env.Setenv("RUNNER_NATS", url)
	for i := range 2 {
		name := fmt.Sprintf("w%d", i+1)
		dir, err := workDir(name)
		if err != nil {
			return err
		}
		if err := startScriptWorker(env, url, name, dir); err != nil {
			return err
		}
	}
	return nil
}

// startScriptWorker starts a worker for a script in workDir (the
// script's directory, no git repository: a job whose items run in
// worktrees gets one of the worker's own, filled from the job's bundles;
// or a clone of the script's repository), with its environment and
// what the scripts' first lines add to theirs before any item runs (the
// stand-ins in $WORK/bin, the git identity), as a user's worker has its
// own, stopped when it ends.
func startScriptWorker(env *testscript.Env, url, name, workDir string) error {
	w := exec.Command("runner", "worker", "--nats", url, "--name", name, "--ack-wait", natsAckWait.String(), "--concurrency", "4", "--work-dir", workDir)
	w.Env = append(env.Vars, "PATH="+filepath.Join(env.WorkDir, "bin")+string(filepath.ListSeparator)+env.Getenv("PATH"),
		"GIT_AUTHOR_NAME=runner-test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=runner-test", "GIT_COMMITTER_EMAIL=test@example.com")
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a test killed midway leaves no worker behind
	log, err := os.Create(filepath.Join(os.TempDir(), "runner-worker-"+name+"-"+filepath.Base(env.WorkDir)+".log"))
	if err != nil {
		return err
	}
	w.Stdout, w.Stderr = log, log
	if err := w.Start(); err != nil {
		log.Close()
		return err
	}
	env.Defer(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
		log.Close()
		os.Remove(log.Name())
	})
	return nil
}

// natsScripts are the scripts that run map items (agentScripts) but those
// whose checks need a capability the NATS dispatcher does not declare
// (natsNeeds: they run there once it does) and those that check what is
// local by design (natsLocalOnly).
func natsScripts(t *testing.T) []string {
	var names []string
	for _, name := range agentScripts {
		if need, ok := natsNeeds[name]; ok && !need.has(natscoord.Capabilities) {
			t.Logf("%s: not on NATS workers: they do not declare %s", name, need.name)
			continue
		}
		if why, ok := natsLocalOnly[name]; ok {
			t.Logf("%s: not on NATS workers: %s", name, why)
			continue
		}
		names = append(names, name)
	}
	return names
}

// capability is one of itemtask.Capabilities, by name.
type capability struct {
	name string
	has  func(itemtask.Capabilities) bool
}

var (
	checkpoints = capability{"Checkpoints", func(c itemtask.Capabilities) bool { return c.Checkpoints }}
	liveEvents  = capability{"LiveEvents", func(c itemtask.Capabilities) bool { return c.LiveEvents }}
	slotRelease = capability{"SlotRelease", func(c itemtask.Capabilities) bool { return c.SlotRelease }}
	worktrees   = capability{"Worktrees", func(c itemtask.Capabilities) bool { return c.Worktrees }}
)

// natsNeeds are the scripts whose checks need a capability beyond running
// items to their outcome.
var natsNeeds = map[string]capability{
	// a resumed item goes on from its last finished step
	"mapreduce_resume_steps": checkpoints,
	// the live line counts items retrying; --tag shows an item's stderr
	// as it comes
	"progress_counts": liveEvents,
	"tag_output":      liveEvents,
	// a step's retry delay gives the job's slot to the next item
	"mapreduce_concurrency": slotRelease,
	// items commit in git worktrees (map.isolation: worktree)
	"isolation_merge":       worktrees,
	"commit_required":       worktrees,
	"fix_loop_counts":       worktrees,
	"results_prodigy_shape": worktrees,
	"map_zero_items":        worktrees,
}

// natsLocalOnly are the scripts that check what cannot hold on NATS
// workers by design (SPEC §11), with why.
var natsLocalOnly = map[string]string{
	"mapreduce_breaker_probe": "it changes the environment (env FAIL=6) after the workers started: a worker runs items with its own",
	"secrets":                 "it sets API_TOKEN after the workers started: a worker takes secrets from its own environment",
	"claude_stream_log":       "an item's raw stream log stays on the worker that ran it, whose store is removed",
	"breaker_kills":           "it counts a step's circuit breaker across items, which on NATS is per worker process (§11.5)",
	"secrets_not_stored":      "it gives secrets with --set, which a run on NATS refuses: secrets never go on NATS (§11.6; TestNATSSecrets)",
	"map_shared_checkout":     "its items commit in the user's checkout (map.isolation: none), where on NATS they run in the worker's directory",
	// On NATS an item's worktree and its branch, until its result, are in
	// a worker's clone (TestNATSWorktreeClones). These are the checks of
	// where they are in the user's repository, each moved out of a script
	// that runs on NATS with the checks that hold wherever items run
	// (isolation_worktree, isolation_resume, isolation_dlq_retry,
	// jobs_housekeeping).
	"isolation_worktree_layout":  "it checks that an item's worktree is under the job's directory in the user's repository",
	"isolation_resume_merged":    "it counts the worktrees a killed job left in the user's repository and merges a running item's branch there by hand (TestNATSGitCoordinatorCrash kills a job between an item's fetch and its recorded merge)",
	"isolation_dlq_retry_merged": "it counts the worktrees a killed dlq retry left in the user's repository and merges a running item's branch there by hand",
	"jobs_housekeeping_killed":   "it counts the items' worktrees a killed job left in the user's repository",
}
