package appendfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// appendRaw writes bytes straight to the file, as a write cut short by a
// full disk or a crash leaves them.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCutsTornLastLine(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than one read of the tail
	for _, tc := range []struct{ name, before, want string }{
		{"new file", "", "c\n"},
		{"complete", "a\nb\n", "a\nb\nc\n"},
		{"torn", "a\nb\n{\"torn", "a\nb\nc\n"},
		{"only torn", "{\"torn", "c\n"},
		{"long torn", "a\n" + long, "a\nc\n"},
		{"long complete then torn", long + "\n" + long, long + "\nc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			if tc.before != "" {
				appendRaw(t, path, tc.before)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("c\n")); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want {
				t.Errorf("file = %.40q... (%d bytes), want %.40q... (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
		})
	}
}

// While one File is open, a second Open does not cut: the partial line
// may be the first one's write in progress.
func TestOpenLeavesTailOfOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, path, "a\n{\"in progress")
	second, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	second.Close()
	if got, _ := os.ReadFile(path); string(got) != "a\n{\"in progress" {
		t.Errorf("file = %q: cut under a writer", got)
	}
	first.Close()
	third, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	third.Close()
	if got, _ := os.ReadFile(path); string(got) != "a\n" {
		t.Errorf("file = %q after the writer closed, want the torn line cut", got)
	}
}

// A write cut short (here by the file size limit, as a full disk would)
// makes every later write fail instead of continuing the torn line.
func TestWriteAfterCutShortFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	limit := old
	limit.Cur = 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skip(err)
	}
	n, err := f.Write([]byte("0123456789abcdef\n"))
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	if n != 10 || !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Write over the limit = %d, %v; want 10, EFBIG", n, err)
	}
	if _, err := f.Write([]byte("next\n")); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("Write after a short write = %v, want the earlier failure", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "0123456789" {
		t.Errorf("file = %q, want only the torn bytes", got)
	}
}
