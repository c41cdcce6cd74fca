package proc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// directCase is one command of the differential corpus and whether Run
// executes it without the shell.
type directCase struct {
	command string
	direct  bool
	timeout time.Duration
}

// directCorpus is the differential test's corpus: commands run in a
// fixture directory (see writeFixture) both under sh and as Run runs them.
func directCorpus() []directCase {
	many := "hello" + strings.Repeat(" arg", 300)
	cases := []directCase{
		// simple commands, run directly
		{command: "cat data.txt", direct: true},
		{command: "hello a b c", direct: true},
		{command: "hello", direct: true},
		{command: "  hello   spaced\targs  ", direct: true},
		{command: "hello a=b %1 @x +y ,z -q --long=v ./p:q", direct: true},
		{command: many, direct: true},
		{command: "cat", direct: true},            // reads stdin
		{command: "wc -l", direct: true},          // reads stdin
		{command: "sh", direct: true},             // runs stdin as a script
		{command: "touch made.txt", direct: true}, // side effect
		{command: "mkdir -p a/b/c", direct: true}, // side effect
		{command: "ls", direct: true},             // sees both
		{command: "env", direct: true},            // the environment, in order
		{command: "printenv PWD IFS OPTIND", direct: true},
		{command: "printenv PPID", direct: true},
		{command: "/bin/pwd", direct: true},
		{command: "/bin/pwd -L", direct: true},
		{command: "./local 1 2", direct: true},           // a script with #!
		{command: "./noshebang-local 1 2", direct: true}, // ENOEXEC: sh runs it
		{command: "noshebang x y", direct: true},
		{command: "./data.txt", direct: true}, // not executable: 126
		{command: "./sub", direct: true},      // a directory: 126
		{command: "sub", direct: true},        // not in PATH: 127
		{command: "notexec", direct: true},    // only a file without x in PATH: 126
		{command: "prog2", direct: true},      // a later PATH entry has it executable
		{command: "shadow", direct: true},     // a directory first in PATH, the program later
		{command: "missing-program-xyz arg", direct: true},
		{command: "/nonexistent/abs", direct: true},
		{command: "segv", direct: true},    // killed by SIGSEGV: sh prints it
		{command: "sigterm", direct: true}, // killed by SIGTERM
		{command: "sigint", direct: true},  // killed by SIGINT: sh says nothing
		{command: "sigpipe", direct: true},
		{command: "time -f %x ./local", direct: true}, // a program in dash, a keyword in bash
		{command: "sleep 300", direct: true, timeout: testkit.Scale(50 * time.Millisecond)},
		{command: "yes", direct: true, timeout: testkit.Scale(50 * time.Millisecond)},
		{command: "trapterm", direct: true, timeout: testkit.Scale(50 * time.Millisecond)}, // sh dies of the SIGTERM the program survives
		// builtins and keywords: under sh
		{command: "true"}, {command: "true --help"}, {command: "false --help"},
		{command: "echo -e x"}, {command: "echo -n x y"}, {command: "printf %q x"},
		{command: "pwd"}, {command: "kill -l"}, {command: "test 1 -eq a"}, {command: "[ --version"},
		{command: "cd /"}, {command: "cd sub"}, {command: "exit 3"}, {command: "export A=1"},
		{command: "exec ./local"}, {command: ". ./noshebang-local"}, {command: ": x"},
		{command: "umask"}, {command: "type ls"}, {command: "command -v ls"}, {command: "read x"},
		{command: "set -- a"}, {command: "unset PATH"}, {command: "wait"}, {command: "hash"},
		{command: "if true"}, {command: "! false"}, {command: "{ ls"}, {command: "for x in a"},
		// shell syntax: under sh
		// single-quoted strings, as runner quotes the values it puts in a command: run directly
		{command: `cat 'data.txt'`, direct: true},
		{command: `'hello' 'a b' '' x''y 'it$s' '*' '~' '\n' 'line1` + "\n" + `line2' 'é' --f='a;b'`, direct: true},
		{command: `'./local' '1'`, direct: true},
		{command: `'missing program'`, direct: true},
		{command: `hello ''`, direct: true},
		{command: `'cd' /`}, {command: `'true' --help`}, {command: `'A=1' hello`}, {command: `''`},
		{command: `hello 'unterminated`}, {command: `hello 'it'\''s'`}, {command: "hello 'nul\x00'"},
		// shell syntax: under sh
		{command: `echo a\\nb`}, {command: `cat "data.txt"`},
		{command: `cat data\.txt`}, {command: "cat $HOME"}, {command: "hello ${A}"},
		{command: "hello `ls`"}, {command: "hello $(ls)"}, {command: "cat *.txt"},
		{command: "hello ?ata.txt"}, {command: "hello [d]ata.txt"}, {command: "hello ~"},
		{command: "hello ~/x"}, {command: "hello {a,b}"}, {command: "VAR=x env"},
		{command: "A=1 printenv A"}, {command: "ls | wc -l"}, {command: "cat < data.txt"},
		{command: "hello > out.txt"}, {command: "hello 2>&1"}, {command: "ls; ls"},
		{command: "ls && ls"}, {command: "ls || ls"}, {command: "true &"}, {command: "(ls)"},
		{command: "ls #comment"}, {command: "ls\nls"}, {command: "hello a^b"},
		{command: "hello é"}, {command: ""}, {command: "   "},
	}
	return cases
}

// writeFixture fills dir (empty) with the files the corpus uses, among
// them the PATH directories .bin, .noexec and .bin2.
func writeFixture(t *testing.T, dir string) {
	t.Helper()
	const x, r = 0o755, 0o644
	for _, f := range []struct {
		name, text string
		mode       fs.FileMode
	}{
		{"data.txt", "line one\nline two\n", r},
		{"local", "#!/bin/sh\necho \"local $0 $*\"; echo err >&2; exit 4\n", x},
		{"noshebang-local", "echo \"noshebang $0 $*\"; touch by-script; exit 5\n", x},
		{".bin/hello", "#!/bin/sh\necho \"hello $# $*\"; echo \"to stderr\" >&2\n", x},
		{".bin/noshebang", "echo \"noshebang $0 $*\"\nnot-a-command-xyz\n", x},
		{".bin/notexec", "#!/bin/sh\necho never\n", r},
		{".bin/segv", "#!/bin/sh\necho before; kill -SEGV $$\n", x},
		{".bin/sigterm", "#!/bin/sh\nkill -TERM $$\n", x},
		{".bin/sigint", "#!/bin/sh\nkill -INT $$\n", x},
		{".bin/sigpipe", "#!/bin/sh\nkill -PIPE $$\n", x},
		{".bin/trapterm", "#!/bin/sh\ntrap 'exit 0' TERM\nsleep 300 & wait\n", x},
		{".noexec/prog2", "#!/bin/sh\necho wrong\n", r},
		{".bin2/prog2", "#!/bin/sh\necho prog2 later in PATH\n", x},
		{".bin2/shadow", "#!/bin/sh\necho shadow program\n", x},
	} {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sub", ".bin/shadow"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every file under dir: name, mode and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, info.Mode())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// outcome is what a user can see of one run: its Result and its side
// effects on the fixture.
func outcome(t *testing.T, dir string, env []string, c directCase, shell bool) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(real, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	writeFixture(t, real)
	res := runT(t, Spec{
		Command: c.command, Shell: shell, Dir: dir, Env: env, Timeout: c.timeout,
		Stdin: strings.NewReader("input line\nls\n"), CaptureStdout: true, CaptureStderr: true,
	})
	if c.timeout > 0 { // how much a program printed before its timeout varies
		res.Stdout, res.Stderr, res.StdoutBytes, res.StderrBytes = nil, nil, 0, 0
	}
	return fmt.Sprintf("kind %s code %d signal %q err %v\nstdout %q (%d bytes)\nstderr %q (%d bytes)\nfiles:\n%s",
		res.Kind, res.ExitCode, res.Signal, res.Err, res.Stdout, res.StdoutBytes, res.Stderr, res.StderrBytes, snapshot(t, real))
}

// differentialEnvs are the environments the corpus runs in: a plain one
// whose PWD names the directory through a symbolic link, and one with
// what dash changes (duplicate and invalid names, a wrong PWD, IFS,
// OPTIND, PPID) in an order dash does not keep.
func differentialEnvs(dir, bin, bin2, noexec string) map[string][]string {
	path := "PATH=" + bin + ":" + noexec + ":" + bin2 + ":/usr/bin:/bin"
	return map[string][]string{
		"plain": {path, "HOME=" + dir, "PWD=" + dir, "LANG=C"},
		"odd": {"Z=1", "TERM=dumb", "A-B=1", "=x", "noequals", "PWD=/", "IFS=x", "OPTIND=5", "PPID=1", "LINENO=3",
			"HOME=/nonexistent", "AV=1", path, "BE=2", "Z=2", "_=/usr/bin/env", "lower_case=1", "PS1=z", "MAIL=m"},
	}
}

// differences runs every command of cases both ways and describes each
// that differs; in every environment, or with short only in the one
// with dash's quirks.
func differences(t *testing.T, cases []directCase, short bool) []string {
	t.Helper()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	dir := filepath.Join(base, "link") // PWD through a link: pwd -L and -P differ
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, dir); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for name, env := range differentialEnvs(dir, filepath.Join(dir, ".bin"), filepath.Join(dir, ".bin2"), filepath.Join(dir, ".noexec")) {
		if short && name != "odd" {
			continue
		}
		for _, c := range cases {
			viaShell := outcome(t, dir, env, c, true)
			asRun := outcome(t, dir, env, c, false)
			if viaShell != asRun {
				diffs = append(diffs, fmt.Sprintf("env %s, %q:\n%s", name, c.command, lineDiff(viaShell, asRun)))
			}
		}
	}
	return diffs
}

// Every command of the corpus gives the same result, output and files
// whether Run executes it directly or sh does; the corpus says which
// commands run directly.
func TestDirectMatchesShell(t *testing.T) {
	if !shellIsDash() {
		t.Skip("/bin/sh is not dash: every command runs under it")
	}
	cases := directCorpus()
	for _, c := range cases {
		if got := Direct(c.command); got != c.direct {
			t.Errorf("Direct(%q) = %v, want %v", c.command, got, c.direct)
		}
	}
	// -short: the environment with dash's quirks; the full run has both.
	for _, d := range differences(t, cases, testing.Short()) {
		t.Error(d)
	}
}

// lineDiff shows the lines of two outcomes that differ.
func lineDiff(viaShell, asRun string) string {
	a, b := strings.Split(viaShell, "\n"), strings.Split(asRun, "\n")
	var out strings.Builder
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			fmt.Fprintf(&out, "  under sh:     %s\n  as Run runs: %s\n", x, y)
		}
	}
	return out.String()
}

// The corpus catches a rule that is too loose: with any builtin that has
// a program of the same name taken off the list, some command of the
// corpus starting with it gives a different result.
func TestDirectCorpusCatchesLooseRule(t *testing.T) {
	if !shellIsDash() {
		t.Skip("/bin/sh is not dash: every command runs under it")
	}
	// "[" is no word at all to Words: its character keeps it under sh.
	for _, builtin := range []string{"true", "false", "echo", "printf", "pwd", "kill", "test"} {
		var cases []directCase
		for _, c := range directCorpus() {
			if strings.HasPrefix(c.command, builtin+" ") || c.command == builtin {
				cases = append(cases, c)
			}
		}
		delete(shellWords, builtin)
		// Both environments even with -short: only a PWD through a
		// link tells the builtin pwd from the program.
		diffs := differences(t, cases, false)
		shellWords[builtin] = true
		if len(diffs) == 0 {
			t.Errorf("with %q run directly, the corpus (%d of its commands start with it) sees no difference", builtin, len(cases))
		}
	}
}

// BenchmarkRunCatDevNull runs an external program, `cat /dev/null`,
// under sh (two processes: sh forks cat) and directly (one), with the
// environment of a step.
func BenchmarkRunCatDevNull(b *testing.B) {
	env := os.Environ()
	for _, shell := range []bool{true, false} {
		name := "direct"
		if shell {
			name = "sh"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if res := Run(b.Context(), Spec{Command: "cat /dev/null", Shell: shell, Env: env}); res.Kind != KindOK {
					b.Fatal(res.Err)
				}
			}
		})
	}
}
