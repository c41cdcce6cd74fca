package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow"
)

// Every ```yaml block in the README is a valid workflow.
func TestReadmeWorkflowsValidate(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatchIndex(string(data), -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml blocks in README.md")
	}
	for _, b := range blocks {
		line := 1 + strings.Count(string(data[:b[2]]), "\n")
		if _, err := workflow.Parse("README.md block at line "+strconv.Itoa(line), data[b[2]:b[3]]); err != nil {
			t.Errorf("%v", err)
		}
	}
}
