package job

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

func parse(t *testing.T, file, src string) *workflow.Workflow {
	t.Helper()
	wf, err := workflow.Parse(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// finishedSteps is the journal of a phase whose first n steps finished.
func finishedSteps(phase string, n int) map[string]map[int]state.StepRecord {
	recs := map[int]state.StepRecord{}
	for i := range n {
		recs[i] = state.StepRecord{Phase: phase, Index: i, Status: "succeeded"}
	}
	return map[string]map[int]state.StepRecord{phase: recs}
}

// wantProblems fails t unless errs are one problem for each of want,
// each containing its text.
func wantProblems(t *testing.T, errs workflow.ParseErrors, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d problems, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
		}
	}
}

const ciFile = `
- {id: build, shell: make build}
- {id: test, shell: make test, timeout: 3s}
- {shell: make deploy}
`

// A file that changes the failed step and those after it, adds steps
// after it or removes them, fits a job whose first steps finished; one
// that changes, moves or drops a finished step does not, and the error
// says which, at its place in the new file.
func TestCheckReplacementStandard(t *testing.T) {
	old := parse(t, "ci.yml", ciFile)
	p := progress{done: finishedSteps(PhaseCommands, 1)} // build finished; test failed
	for _, tc := range []struct {
		name, next string
		want       []string // one problem each; nil: it fits
	}{
		{"the failed step's timeout", `
- {id: build, shell: make build}
- {id: test, shell: make test, timeout: 30s}
- {shell: make deploy}
`, nil},
		{"steps after the failed one added and changed", `
- {id: build, shell: make build, timeout: 1m, name: Build}
- {shell: make lint}
- {id: test, shell: make test-all}
`, nil},
		{"the finished step's command", `
- {id: build, shell: make all}
- {id: test, shell: make test}
`, []string{"ci.yml:2:3: step 1 (build) finished running `shell: make build`, and this file runs `shell: make all`"}},
		{"a step inserted before the finished one", `
- {shell: make lint}
- {id: build, shell: make build}
- {id: test, shell: make test}
`, []string{"ci.yml:3:3: step 1 (build) finished, and is step 2 here"}},
		{"the finished step dropped", `
- {id: test, shell: make test}
`, []string{"ci.yml:2:3: step 1 (build) finished running `shell: make build`, and this file runs `shell: make test`"}},
		{"the finished step's id dropped (matched by position)", `
- {shell: make build}
- {shell: make test}
`, []string{"ci.yml:2:3: step 1 (build) finished, and this file changes its id: a finished step does not run again, so what it did and what it left for the steps after it stay as they were"}},
		{"the mode", `
mode: mapreduce
map: {input: items.json, agent_template: [{shell: x}]}
`, []string{"ci.yml: this is a mapreduce workflow, and the job ran a standard one"}},
		{"the isolation", `
isolation: worktree
steps:
  - {id: build, shell: make build}
`, []string{"isolation is worktree here, and the job ran with none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old.Isolation = workflow.IsolationNone
			errs := checkReplacement(old, parse(t, "ci.yml", tc.next), p, "", nil)
			wantProblems(t, errs, tc.want)
		})
	}
}

const mrFile = `
mode: mapreduce
setup:
  - {id: list, shell: ls > items.json}
map:
  input: items.json
  filter: item.size > 0
  agent_template:
    - {id: fix, shell: "fix ${item}"}
    - {shell: "check ${item} $FLAGS"}
reduce:
  - {shell: "echo ${map.successful}"}
env:
  FLAGS: -v
`

// Once a MapReduce job's map has loaded its items, the item options stay
// and its setup is closed; the template's steps that running items
// finished stay; reduce may change.
func TestCheckReplacementMapReduce(t *testing.T) {
	old := parse(t, "mr.yml", mrFile)
	mapped := progress{done: finishedSteps(PhaseSetup, 1), itemsLoaded: true,
		checkpoints: map[int]state.StepRecord{0: {Index: 0, Status: "succeeded"}}}
	inSetup := progress{done: map[string]map[int]state.StepRecord{}}
	edit := func(old, new string) string { return strings.Replace(mrFile, old, new, 1) }
	for _, tc := range []struct {
		name string
		next string
		p    progress
		want []string
	}{
		{"reduce changed", edit("echo ${map.successful}", "echo done"), mapped, nil},
		{"a later template step changed", edit("check ${item}", "check2 ${item}"), mapped, nil},
		{"map.input changed", edit("input: items.json", "input: other.json"), mapped,
			[]string{`mr.yml:6:10: map.input is "other.json" here, and the job loaded its items from "items.json": the job's items were made with map.input "items.json" when its map began and are stored with it (items.jsonl)`}},
		{"map.input changed before the map began", edit("input: items.json", "input: other.json"), inSetup, nil},
		{"the filter changed", edit("item.size > 0", "item.size > 1"), mapped,
			[]string{`map.filter changed ("item.size > 0" → "item.size > 1")`}},
		{"a finished template step changed", edit("fix ${item}", "fix2 ${item}"), mapped,
			[]string{"agent_template step 1 (fix) finished running `shell: fix ${item}`"}},
		{"a step added to the finished setup", edit("  - {id: list, shell: ls > items.json}", "  - {id: list, shell: ls > items.json}\n  - {shell: date}"), mapped,
			[]string{"the setup phase has 2 steps here, and the job finished it with 1 before going on"}},
		{"a finished setup step's capture", edit("ls > items.json}", "ls > items.json, capture_output: listing}"), mapped,
			[]string{"mr.yml:4:5: setup step 1 (list) finished, and this file changes its capture_output"}},
		{"a finished template step's output_file", edit(`"fix ${item}"}`, `"fix ${item}", output_file: fix.log}`), mapped,
			[]string{"mr.yml:9:7: agent_template step 1 (fix) finished, and this file changes its output_file"}},
		{"a finished template step's timeout", edit(`"fix ${item}"}`, `"fix ${item}", timeout: 5m}`), mapped, nil},
		{"an env entry the template reads, once items ran", edit("FLAGS: -v", "FLAGS: -q"), mapped,
			[]string{`mr.yml:14:3: env FLAGS is "-q" here, and the job ran with "-v": agent_template step 2 (check ${item} $FLAGS) finished and reads FLAGS (mr.yml:10)`}},
		{"an env entry the template reads, before the map began", edit("FLAGS: -v", "FLAGS: -q"), inSetup, nil},
		{"a step added to setup before the map began", edit("  - {id: list, shell: ls > items.json}", "  - {id: list, shell: ls > items.json}\n  - {shell: date}"), inSetup, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkReplacement(old, parse(t, "mr.yml", tc.next), tc.p, "", nil)
			wantProblems(t, errs, tc.want)
		})
	}
}

// A variable is used when a finished step reads it (in its command, its
// env, its condition, through an env entry made from it) or set it; the
// steps that did not run yet do not count.
func TestUsedBy(t *testing.T) {
	wf := parse(t, "ci.yml", `
env:
  TARGET: "${REGION}-prod"
  URL: "https://$TARGET/api"
steps:
  - {id: build, shell: "make build MODE=${MODE}", capture_output: artifact}
  - {shell: "curl $URL", when: "LEVEL > 2"}
  - {shell: "echo ${LATER} ${env.REGION}"}
`)
	p := progress{done: finishedSteps(PhaseCommands, 2)}
	p.done[PhaseCommands][0] = state.StepRecord{Index: 0, Status: "succeeded", Vars: map[string]any{"artifact": "x"}}
	for name, want := range map[string]string{
		"MODE":     "step 1 (build) finished and reads MODE (ci.yml:6)",
		"REGION":   "step 2 (curl $URL) finished and reads URL (ci.yml:7), which env makes from REGION",
		"LEVEL":    "step 2 (curl $URL) finished and reads LEVEL (ci.yml:7)",
		"artifact": "step 1 (build) finished and set it",
		"LATER":    "",
		"MOD":      "",
	} {
		if got := usedBy(wf, p, "", name); got != want {
			t.Errorf("usedBy(%s) = %q, want %q", name, got, want)
		}
	}
}

const effectFile = `
env:
  REGION: eu
  TARGET: ${REGION}-prod
  MODE: fast
steps:
  - write_file: {path: out/version.txt, content: "version=1"}
    id: save
    timeout: 3s
  - shell: echo build for $TARGET on $HOST
    capture_output: version
    capture_format: string
    output_file: build.log
    retry_config: {attempts: 2}
  - shell: echo deploy ${version} $MODE
`

// A finished step's every field that shaped what it did or left for the
// later steps stays (a write_file's content, a capture's name or format,
// output_file...); how runner drove it (timeout, retries, name) may
// change. An env entry that changes a variable a finished step read is
// refused where it is, naming the step, unless the job's --set gives it.
func TestCheckReplacementEffects(t *testing.T) {
	old := parse(t, "ci.yml", effectFile)
	p := progress{done: finishedSteps(PhaseCommands, 2)} // save and build finished; deploy failed
	edit := func(from, to string) string { return strings.Replace(effectFile, from, to, 1) }
	const fixed = "a finished step does not run again, so what it did and what it left for the steps after it stay as they were (to change them, start a new job)"
	for _, tc := range []struct {
		name, next string
		set        map[string]string
		want       []string
	}{
		{"timeout, retries and name of finished steps", strings.Replace(edit("timeout: 3s", "timeout: 1m\n    name: Save"), "attempts: 2", "attempts: 5", 1), nil, nil},
		{"write_file content", edit("version=1", "version=2"), nil,
			[]string{"ci.yml:7:5: step 1 (save) finished, and this file changes its write_file: " + fixed}},
		{"capture_output renamed", edit("capture_output: version", "capture_output: ver"), nil,
			[]string{"ci.yml:10:5: step 2 (echo build for $TARGET on $HOST) finished, and this file changes its capture_output: " + fixed}},
		{"capture_format and output_file", edit("capture_format: string\n    output_file: build.log", "capture_format: lines\n    output_file: b.log"), nil,
			[]string{"changes its capture_format, output_file: "}},
		{"an env entry a finished step read through another", edit("REGION: eu", "REGION: us"), nil,
			[]string{`ci.yml:3:3: env REGION is "us" here, and the job ran with "eu": step 2 (echo build for $TARGET on $HOST) finished and reads TARGET (ci.yml:10), which env makes from REGION; the job's steps see one value of each variable (to run with another, start a new job)`}},
		{"an env entry made otherwise", edit("TARGET: ${REGION}-prod", "TARGET: {command: hostname}"), nil,
			[]string{"ci.yml:4:3: env TARGET is the output of `hostname` here, and the job ran with \"${REGION}-prod\": step 2"}},
		{"an env entry a finished step read removed", edit("  TARGET: ${REGION}-prod\n", ""), nil,
			[]string{"ci.yml: env TARGET is not defined here, and the job ran with \"${REGION}-prod\": step 2"}},
		{"an env entry added for a variable a finished step read", edit("MODE: fast", "MODE: fast\n  HOST: ci"), nil,
			[]string{`ci.yml:6:3: env HOST is "ci" here, and the job ran without it: step 2 (echo build for $TARGET on $HOST) finished and reads HOST (ci.yml:10)`}},
		{"an env entry only later steps read", edit("MODE: fast", "MODE: slow"), nil, nil},
		{"an env entry that --set gives", edit("REGION: eu", "REGION: us"), map[string]string{"REGION": "eu"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkReplacement(old, parse(t, "ci.yml", tc.next), p, "", tc.set)
			wantProblems(t, errs, tc.want)
		})
	}
}

const profileFile = `
env:
  REGION: eu
profiles:
  prod:
    REGION: eu-prod
steps:
  - shell: deploy to $REGION
  - shell: check
`

// The job's profile defines a variable over env: an edit of its entry
// changes the value the job's steps see, one of env's entry does not.
func TestCheckReplacementProfile(t *testing.T) {
	old := parse(t, "ci.yml", profileFile)
	p := progress{done: finishedSteps(PhaseCommands, 1)}
	edit := func(from, to string) string { return strings.Replace(profileFile, from, to, 1) }
	for _, tc := range []struct {
		name, next, profile string
		want                []string
	}{
		{"the profile's entry", edit("REGION: eu-prod", "REGION: us-prod"), "prod",
			[]string{`ci.yml:6:5: env REGION is "us-prod" here, and the job ran with "eu-prod": step 1 (deploy to $REGION) finished and reads REGION (ci.yml:8)`}},
		{"env's entry the profile overrides", edit("REGION: eu\n", "REGION: us\n"), "prod", nil},
		{"env's entry without the profile", edit("REGION: eu\n", "REGION: us\n"), "",
			[]string{`ci.yml:3:3: env REGION is "us" here, and the job ran with "eu"`}},
		{"another profile's entry", edit("REGION: eu-prod", "REGION: us-prod"), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkReplacement(old, parse(t, "ci.yml", tc.next), p, tc.profile, nil)
			wantProblems(t, errs, tc.want)
		})
	}
}
