package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLooksLikeFile(t *testing.T) {
	for text, want := range map[string]bool{
		"items.json": true, "data/items": true, "/tmp/x.jsonl": true, ".prodigy/doc-areas.json": true,
		"generate": false, "cat items.json": false, "jq -c . x.json": false, "echo '[1]'": false,
		"find . -name '*.rs'": false, "a.json|jq": false, "$DIR/x.json": false,
	} {
		if got := looksLikeFile(text); got != want {
			t.Errorf("looksLikeFile(%q) = %t, want %t", text, got, want)
		}
	}
}

// A map input that names a regular file is read; one that looks like a
// file and names nothing, or names a FIFO or a directory, is an error; a
// command is left to run.
func TestFindInput(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	if err := os.MkdirAll(filepath.Join(job, "sub.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path string) {
		if err := os.WriteFile(path, []byte("[1]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(job, "in-job.json"))
	write(filepath.Join(dir, "in-cwd.json"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := []string{job, dir}
	for _, tt := range []struct{ text, file, err string }{
		{"in-job.json", filepath.Join(job, "in-job.json"), ""},
		{"in-cwd.json", filepath.Join(dir, "in-cwd.json"), ""},
		{"nosuchfile.json", "", "no such file nosuchfile.json (looked for " + filepath.Join(job, "nosuchfile.json") + " and " + filepath.Join(dir, "nosuchfile.json") + ")"},
		{"fifo.json", "", "fifo.json is not a regular file (a named pipe)"},
		{"sub.d", "", "sub.d is not a regular file (a directory)"},
		{"generate-items", "", ""},
		{"cat in-cwd.json", "", ""},
	} {
		file, err := FindInput(tt.text, dirs)
		if file != tt.file || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("FindInput(%q) = %q, %v; want %q, %q", tt.text, file, err, tt.file, tt.err)
		}
	}
}

// Before a job starts, a literal map.input that looks like a file and
// does not exist is a positioned error, unless setup may write it; a FIFO
// is one with setup too.
func TestCheckInputFile(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := syscall.Mkfifo("fifo.json", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ src, want string }{
		{"mode: mapreduce\nmap:\n  input: nosuchfile.json\n  agent_template: [{shell: x}]\n", "w.yml:3:10: map.input: no such file nosuchfile.json: "},
		{"mode: mapreduce\nsetup: [{shell: make items.json}]\nmap:\n  input: items.json\n  agent_template: [{shell: x}]\n", ""},
		{"mode: mapreduce\nsetup: [{shell: x}]\nmap:\n  input: fifo.json\n  agent_template: [{shell: x}]\n", "w.yml:4:10: map.input: fifo.json is not a regular file (a named pipe)"},
		{"mode: mapreduce\nmap:\n  input: ${DIR}/items.json\n  agent_template: [{shell: x}]\n", ""},
		{"mode: mapreduce\nmap:\n  input: generate\n  agent_template: [{shell: x}]\n", ""},
	} {
		wf, err := Parse("w.yml", []byte(tt.src))
		if err != nil {
			t.Fatal(err)
		}
		err = CheckInputFile(wf)
		if (err == nil) != (tt.want == "") || err != nil && !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.src, err, tt.want)
		}
	}
}
