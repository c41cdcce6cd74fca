package e2e

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/internal/testkit"
)

// reportWorkflow makes a job with everything the report draws: parallel
// attempts, failures, retry delays and a workflow breaker pause.
const reportWorkflow = `name: report-demo
mode: mapreduce
setup:
  - shell: seq 1 30 > "${DIR}/items.txt"
map:
  input: ${DIR}/items.txt
  max_parallel: 3
  agent_template:
    - name: work
      shell: |
        sleep 0.0$(( ${item} % 5 ))
        if [ ${item} -ge 10 ] && [ ${item} -le 13 ]; then echo "upstream down" >&2; exit 1; fi
        if [ $(( ${item} % 10 )) -eq 3 ] && [ ! -f "${DIR}/r${item}" ]; then touch "${DIR}/r${item}"; exit 75; fi
      retry_config: {attempts: 2, initial_delay: 100ms, retry_on: [{exit_codes: [75]}]}
error_policy:
  circuit_breaker: {failure_threshold: 3, timeout: 300ms, success_threshold: 1}
`

// standardReportWorkflow is a CI pipeline whose second step fails until
// the file ok exists: run, fixed, resumed.
const standardReportWorkflow = `name: ci
steps:
  - name: build
    shell: echo built
  - name: check
    shell: test -f "${DIR}/ok"
`

// agentReportWorkflow runs two items in git worktrees at once, each
// writing shared.txt: one merges, the other conflicts.
const agentReportWorkflow = `name: agents
mode: mapreduce
map:
  input: printf 'a\nb\n'
  max_parallel: 2
  isolation: worktree
  agent_template:
    - shell: |
        touch "${DIR}/ready-${item}"
        for i in $(seq 1 200); do [ -f "${DIR}/ready-a" ] && [ -f "${DIR}/ready-b" ] && break; sleep 0.05; done
        echo ${item} > shared.txt && git commit -qam "agent ${item}"
`

// The colours the report draws with, as a screenshot has them.
var (
	green    = [3]uint32{0x2e, 0x9d, 0x57} // a succeeded attempt
	red      = [3]uint32{0xd6, 0x3b, 0x3b} // a failed attempt
	between  = [3]uint32{0xc9, 0xd3, 0xe0} // the break between two runs
	conflict = [3]uint32{0xfd, 0xec, 0xea} // the background of a conflict's row
)

// TestReportInChromium writes the reports of three kinds of job and loads
// each in a real headless Chromium: the page logs nothing to the console,
// the DOM Chromium made of it has the parts of its kind, and its
// screenshot shows them in their colours. A MapReduce job: succeeded
// (green) and failed (red) bars, its DLQ. A standard workflow run twice
// (failed, fixed, resumed): a labelled lane and a table row per step, the
// break between its runs, no DLQ section. An agent job: its merges, the
// conflict in red with its path, its branches and the git merge command.
// Starting Chromium takes seconds of CPU: not with -short.
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Chromium is slow to start")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium on this machine (install the Debian package chromium, as .ci/run does): the report's browser test is skipped")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, ".runner")
	set := "DIR=" + dir

	runJob(t, state, writeFile(t, dir, "report.yml", reportWorkflow), "rep", cmd.ExitItemsInDLQ, "--set", set)
	page := writeReport(t, state, "rep", dir)
	dom := loadPage(t, browser, page, "--dump-dom")
	mustHave(t, "mapreduce", dom, `<h2>Dead-letter queue</h2>`, `<table id="dlq">`, `<p class="sum">`)
	colours := screenshot(t, browser, page)
	// The legend alone has 144 pixels of each colour; bars add thousands.
	if colours[green] < 1000 || colours[red] < 300 {
		t.Errorf("mapreduce: screenshot has %d green and %d red pixels: the timeline is missing", colours[green], colours[red])
	}

	std := writeFile(t, dir, "std.yml", standardReportWorkflow)
	runJob(t, state, std, "std", 1, "--set", set)
	os.WriteFile(filepath.Join(dir, "ok"), nil, 0o600)
	mustRun(t, "resume", "-q", "--state-dir", state, "std")
	page = writeReport(t, state, "std", dir)
	dom = loadPage(t, browser, page, "--dump-dom")
	mustHave(t, "standard", dom, `<text class="lane-label" x="0" y="0" dy="14">build<title>build</title></text>`,
		`<text class="lane-label" x="0" y="20" dy="14">check<title>check</title></text>`, `<table id="steps">`,
		`<td><code>check</code></td><td class="step-succeeded">succeeded</td><td>2</td>`, `<rect class="break" `)
	if strings.Contains(dom, "Dead-letter queue") {
		t.Error("standard: the page has a DLQ section")
	}
	colours = screenshot(t, browser, page)
	if colours[between] < 500 || colours[red] < 300 {
		t.Errorf("standard: screenshot has %d pixels of the break between runs and %d red: the break or the failed attempt is missing", colours[between], colours[red])
	}

	repo := filepath.Join(dir, "repo")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "runner-test", "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "runner-test", "GIT_COMMITTER_EMAIL": "test@example.com"} {
		t.Setenv(k, v)
	}
	if out, err := exec.Command("sh", "-c", "git init -q -b main "+repo+" && cd "+repo+" && echo base > shared.txt && git add shared.txt && git commit -qm base").CombinedOutput(); err != nil {
		t.Fatalf("git: %v: %s", err, out)
	}
	t.Chdir(repo)
	runJob(t, state, writeFile(t, dir, "agent.yml", agentReportWorkflow), "agent", cmd.ExitItemsInDLQ, "--set", set)
	page = writeReport(t, state, "agent", dir)
	dom = loadPage(t, browser, page, "--dump-dom")
	mustHave(t, "agent", dom, `<p id="merge-summary">1 merged (1 commits) + 1 in conflict = 2 item(s) with a branch</p>`,
		`<td><code>shared.txt</code></td></tr>`, `<tr class="conflict">`, `<code>runner/agent</code>: not merged into main`,
		`<code class="command">git merge --no-ff runner/agent</code>`, `1 succeeded + 1 in the DLQ + 0 skipped + 0 pending = 2 items`)
	if colours = screenshot(t, browser, page); colours[conflict] < 2000 {
		t.Errorf("agent: screenshot has %d pixels of a conflict's row: the conflict is not shown in red", colours[conflict])
	}
}

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustRun runs runner with args, which must succeed.
func mustRun(t *testing.T, args ...string) {
	t.Helper()
	var out bytes.Buffer
	if code := cmd.Main(context.Background(), args, &out, &out); code != 0 {
		t.Fatalf("runner %s: exit %d: %s", strings.Join(args, " "), code, out.String())
	}
}

// writeReport writes the report of job id to dir/id.html and returns its
// path.
func writeReport(t *testing.T, state, id, dir string) string {
	t.Helper()
	page := filepath.Join(dir, id+".html")
	mustRun(t, "report", "--state-dir", state, id, "-o", page)
	return page
}

// mustHave fails the test for each of wants that dom lacks.
func mustHave(t *testing.T, kind, dom string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(dom, want) {
			t.Errorf("%s: the page Chromium loaded has no %s", kind, want)
		}
	}
}

// loadPage loads page in headless Chromium with flags and returns what it
// printed on stdout; it fails the test on a console message from the page.
func loadPage(t *testing.T, browser, page string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(filepath.Dir(page), "profile"), "--enable-logging=stderr", "--v=0",
		"--window-size=1240,900"}, flags...)
	chrome := exec.CommandContext(ctx, browser, append(args, "file://"+page)...)
	var stdout, stderr bytes.Buffer
	chrome.Stdout, chrome.Stderr = &stdout, &stderr
	if err := chrome.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console message from the page: %s", line)
		}
	}
	return stdout.String()
}

// screenshot takes a screenshot of page in headless Chromium, next to
// it, and counts its pixels by colour.
func screenshot(t *testing.T, browser, page string) map[[3]uint32]int {
	t.Helper()
	shot := strings.TrimSuffix(page, ".html") + ".png"
	loadPage(t, browser, page, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[[3]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
		}
	}
	t.Logf("screenshot %s", shot)
	return colours
}
