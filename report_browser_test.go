package main

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

// TestReportInChromium writes a job's report and loads it in a real
// headless Chromium: the page logs nothing to the console, and its
// screenshot shows the timeline's succeeded (green) and failed (red) bars.
// Starting Chromium takes tens of seconds of CPU: not with -short.
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
	file := filepath.Join(dir, "report.yml")
	os.WriteFile(file, []byte(reportWorkflow), 0o600)
	runJob(t, filepath.Join(dir, ".runner"), file, "rep", cmd.ExitItemsInDLQ, "--set", "DIR="+dir)
	page := filepath.Join(dir, "report.html")
	var out bytes.Buffer
	if code := cmd.Main(context.Background(), []string{"report", "--state-dir", filepath.Join(dir, ".runner"), "rep", "-o", page}, &out, &out); code != 0 {
		t.Fatalf("report: exit %d: %s", code, out.String())
	}

	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chrome := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--window-size=1240,900", "--screenshot="+shot, "file://"+page)
	log, err := chrome.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, log)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console message from the page: %s", line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, log)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	green, red := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			switch [3]uint32{r >> 8, g >> 8, bl >> 8} {
			case [3]uint32{0x2e, 0x9d, 0x57}:
				green++
			case [3]uint32{0xd6, 0x3b, 0x3b}:
				red++
			}
		}
	}
	// The legend alone has 144 pixels of each colour; bars add thousands.
	if green < 1000 || red < 300 {
		t.Errorf("screenshot has %d green and %d red pixels: the timeline is missing", green, red)
	}
	t.Logf("screenshot %s: %d green, %d red pixels", shot, green, red)
}
