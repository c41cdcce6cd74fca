package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/runnertest"
)

// TestMain lets the test binary act as runner and as the helper programs
// the scripts use.
func TestMain(m *testing.M) {
	programs := runnertest.Programs()
	programs["runner"] = main
	testscript.Main(m, programs)
}

// TestScripts runs every end-to-end script under testdata/script; -short
// runs those shortLeavesOut does not name.
func TestScripts(t *testing.T) {
	t.Parallel()
	p := runnertest.ScriptParams()
	p.Files = scripts(t, testing.Short())
	// UPDATE=1 rewrites the golden files inside the scripts: the file a
	// `cmp stdout FILE` compares with gets what the command printed.
	p.UpdateScripts = os.Getenv("UPDATE") != ""
	testscript.Run(t, p)
}

// scripts lists the scripts of testdata/script, but for those
// shortLeavesOut names when short. It fails t on a name there that is no
// script's, so that the list never claims more than is left out.
func scripts(t *testing.T, short bool) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/script (%v)", err)
	}
	var run []string
	found := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		found[name] = true
		if _, out := shortLeavesOut[name]; !out || !short {
			run = append(run, f)
		}
	}
	for name := range shortLeavesOut {
		if !found[name] {
			t.Errorf("shortLeavesOut names %s, which is not a script of testdata/script", name)
		}
	}
	return run
}

// shortLeavesOut are the scripts that `go test -short` does not run, each
// with what makes it slow: the full run (make test) runs them. -short
// still runs a script of each kind of dispatch: worktree isolation
// (isolation_branch_names, and dlq_retry_then_merge's merge), `runner
// agent` processes (dispatch_agents) and NATS workers (nats_workers).
var shortLeavesOut = map[string]string{
	"agent_worktree":                "git repositories, worktrees and merges",
	"breaker_kills":                 "breaker timeouts and killed commands",
	"claude_steps":                  "many runs of the stand-in agent",
	"commit_required":               "git repositories and commits",
	"completion":                    "three shells' completion scripts",
	"report_dlq_first":              "1,003 failing items (the report's DLQ bound: TestPageListsFirstDLQItems runs in -short)",
	"dlq_commands":                  "many dlq commands over one job",
	"dlq_concurrent_retry":          "two retries racing for the DLQ",
	"dlq_damaged_empty":             "every DLQ command over a damaged file",
	"dlq_filter_fields":             "many dlq commands over one job",
	"dlq_locked_job_waits":          "waits for another process's lock",
	"dlq_purge_during_retry":        "a purge racing a held retry",
	"dlq_purge_events":              "a job, its purge and its events",
	"dlq_retry_crash":               "a kill -9 of dlq retry",
	"dlq_retry_held":                "a retry held for seconds",
	"dlq_retry_pid_reused":          "leases of gone and living processes",
	"dlq_retry_sighup":              "waits out a signal's grace",
	"dlq_retry_summary_write_error": "dlq retry writing to a full device",
	"dlq_stats_damaged_job":         "several jobs, one of them damaged",
	"durations_labelled":            "waits out a pause between two runs",
	"events_follow_resume":          "events --follow across a resume",
	"events_jobs":                   "many queries over several jobs",
	"examples":                      "the examples wait out real retry delays",
	"fix_loop_counts":               "loops of real runs",
	"interrupt_kills_stubborn":      "three signals, each waiting out the 2 s kill grace",
	"interrupt_sighup":              "waits out a signal's grace",
	"interrupt_sigint":              "waits out a signal's grace",
	"isolation_dlq_retry":           "several jobs and retries, each making and removing git worktrees",
	"isolation_dlq_retry_merged":    "a kill -9 of dlq retry and a retry in git worktrees",
	"isolation_merge":               "many jobs, each making and removing git worktrees",
	"isolation_merged_in_dlq":       "a job and a dlq retry in git worktrees",
	"isolation_resume":              "a kill -9 and a resume in git worktrees",
	"isolation_resume_merged":       "a kill -9 and a resume in git worktrees",
	"isolation_worktree":            "20 items, each in a git worktree of its own",
	"jobs_housekeeping":             "many jobs, each making and removing git worktrees",
	"jobs_housekeeping_killed":      "a kill -9 of a job in git worktrees",
	"jobs_owner_died":               "a kill -9 and the jobs listing after it",
	"logs_follow":                   "follows a running job",
	"map_shared_checkout":           "a git repository",
	"mapreduce_breaker_probe":       "breaker timeouts and probes",
	"mapreduce_collection":          "three error_collection modes, a job each",
	"mapreduce_concurrency":         "items that sleep to overlap",
	"mapreduce_features":            "many runs of one job's features",
	"mapreduce_policy":              "many runs, one per error policy",
	"mapreduce_raw_bytes":           "many runs of raw bytes through every output",
	"mapreduce_resume_item_retry":   "a crash during real retry delays, then resume",
	"mapreduce_resume_steps":        "two crashes of a map with 5 s retry delays",
	"mapreduce_state":               "two jobs running at once while commands query them",
	"mapreduce_value_ids":           "many runs, one per id rule",
	"merge_checkout":                "git repositories and merges",
	"nested_default":                "a MapReduce job of hostile items",
	"on_failure_forms":              "a run per on_failure form",
	"output_newline":                "runs to pipes and terminals",
	"prodigy_capture":               "many runs of Prodigy's capture forms",
	"prodigy_environment":           "many runs of env profiles and secrets",
	"prodigy_filters":               "many runs of Prodigy's filter words",
	"prodigy_fix_loop":              "handler loops with real attempts",
	"prodigy_foreach":               "foreach loops of real commands",
	"prodigy_forms":                 "many runs of Prodigy's spellings",
	"prodigy_legacy":                "many runs of Prodigy's step keys",
	"prodigy_mapreduce":             "git worktrees for Prodigy's MapReduce example",
	"prodigy_older_forms":           "runs of the stand-in agent",
	"prodigy_on_success":            "many runs of handlers",
	"prodigy_output":                "many runs of output captures",
	"prodigy_step_refs":             "many runs of step references",
	"prodigy_validate":              "many runs of validate: loops",
	"prodigy_write_file":            "many runs of write_file",
	"progress":                      "waits for timed progress lines",
	"progress_counts":               "a retrying job whose status lines it reads",
	"resume_fixed_file":             "waits out steps of a second",
	"resume_fixed_file_agent":       "git worktrees and several runs",
	"retry_after":                   "waits out retry delays",
	"retry_attempts":                "real retry delays",
	"retry_budget":                  "real retry delays up to a budget",
	"retry_matchers":                "real retry delays per matcher",
	"secrets_not_stored":            "many runs, then a search of every file",
	"standard_merge":                "git repositories, worktrees and merges",
	"tag_output":                    "runs items in parallel",
	"timeout_kills_group":           "waits out timeouts",
	"timeout_kills_stubborn":        "waits out timeouts and their grace",
	"usage_errors":                  "a run per usage error",
	"validate_errors":               "a validate run per broken file",
	"workflow_not_regular":          "a run per kind of file",
	"write_file_symlinks":           "worktree jobs in a real git repository",
}

// The hostile-input tests (interpolation_hostile, mapreduce_hostile,
// interp's TestShellDelivery) run in temporary directories and assert
// their PWNED* marker files are absent; none may ever land in the checkout.
func TestNoHostileMarkersInCheckout(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case strings.HasPrefix(d.Name(), "PWNED"):
			t.Errorf("%s: a hostile value ran a command in the checkout", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
