package interp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostile are values that must reach the command intact in every context.
var hostile = []string{
	`a b; rm -rf ~ $(x) "q" 'q'`,
	"`touch PWNED`", "$(touch PWNED)", "$HOME", "${HOME}", "$", "$$", "$((1+1))",
	"*", "?", "[a]", "~", "~root", "{a,b}", "!", "#", "# x",
	"a\nb", "\n", "\n\n", "a\n", "\na", "a\rb", "\r\n", "\t", "\tx", "a\tb",
	`\`, `a\`, `\\`, `\n`, "\\\n", `\'`, `\"`, "\\`", `\$`,
	"'", `"`, "''", `""`, `'"'"'`, "", " ", "  ",
	"-n", "--", "-e", "-", "%s", "%%",
	"\x01", "\x01\x01", "\x7f", "\x01\x7f", "a\x01\nb", "héllo", "😀🚀", "\u200fRTL\u202e", "日本語", "\xff\xfe",
	";", "|", "&&", "||", "&", ">", "<", "<<EOF", "()", "{}", "}", "{", ")",
	"EOF", "EOF\n", "\nEOF", "EOF)", "EOF(touch PWNED)", "EOF x)", "Eé", "EOF😀", "x\nEOé\n", "\tEé", "a\nEOF\nb", "\tEOF", "EOF\ntouch PWNED\nEOF",
	"'; touch PWNED; '", `"; touch PWNED; "`, "`;touch PWNED;`", "\"$(touch PWNED)\"",
	"x'$(touch PWNED)'", "a[$(touch PWNED)]", "$(touch PWNED)\nEOF\n$(touch PWNED)",
}

// hostileShort is what -short delivers: one value of each kind of hostile
// (a quick inner loop; the full run delivers every value).
var hostileShort = []string{
	`a b; rm -rf ~ $(x) "q" 'q' ${HOME} *`, "`touch PWNED`", "a\nb", `\'`, "", "\x01\xff", "EOF\ntouch PWNED\nEOF",
}

// shellCase is a context in which a value is delivered to printf or cat.
type shellCase struct {
	name, tmpl string
	want       func(v string) string
	refuse     func(v string) bool // Expand must return an error for v
}

func same(v string) string        { return v }
func trimmed(v string) string     { return strings.TrimRight(v, "\n") } // $(...) drops trailing newlines
func withNewline(v string) string { return v + "\n" }

// breaksHeredoc reports whether a line of a heredoc body with delimiter EOF
// would end it early (it is EOF or, in bash inside $(...), starts with EOF
// and has a ")" later) or lose a byte in dash (it starts with part of EOF and goes
// on with a byte >= 0x80).
func breaksHeredoc(body string, inCmd bool) bool {
	for _, l := range strings.Split(body, "\n") {
		n := 0
		for n < len(l) && n < len("EOF") && l[n] == "EOF"[n] {
			n++
		}
		rest := l[n:]
		if n == 3 && (rest == "" || inCmd && strings.Contains(rest, ")")) || n > 0 && rest != "" && rest[0] >= 0x80 {
			return true
		}
	}
	return false
}

var shellCases = []shellCase{
	{name: "unquoted", tmpl: `printf '%s' ${item.v}`, want: same},
	{name: "double quotes", tmpl: `printf '%s' "${item.v}"`, want: same},
	{name: "mid-word", tmpl: `printf '%s' x${item.v}y`, want: func(v string) string { return "x" + v + "y" }},
	{name: "twice", tmpl: `printf '%s' ${item.v}"${item.v}"'${item.v}'`, want: func(v string) string { return v + v + v }},
	{name: "single quotes", tmpl: `printf '%s' '${item.v}'`, want: same},
	{name: "command substitution in double quotes", tmpl: `printf '%s' "$(printf '%s' "${item.v}")"`, want: trimmed},
	{name: "unquoted in command substitution", tmpl: `printf '%s' "$(printf '%s' ${item.v})"`, want: trimmed},
	{name: "comment", tmpl: `printf '%s' ok # ${item.v}`, want: func(string) string { return "ok" }},
	{name: "comment in command substitution", tmpl: "printf '%s' \"$(printf ok # ${item.v}\n)\"", want: func(string) string { return "ok" }},
	{name: "backquotes", tmpl: "x=`printf '%s' ${item.v}`; printf '%s' \"$x\"", want: trimmed},
	{name: "double quotes in backquotes", tmpl: "x=`printf '%s' \"${item.v}\"`; printf '%s' \"$x\"", want: trimmed},
	{name: "backquotes in double quotes", tmpl: "printf '%s' \"`printf '%s' ${item.v}`\"", want: trimmed},
	{name: "comment in backquotes", tmpl: "x=`printf ok # ${item.v}`; printf '%s' \"$x\"", want: func(string) string { return "ok" }},
	{name: "heredoc", tmpl: "cat <<EOF\n${item.v}\nEOF", want: withNewline},
	{name: "heredoc mid-line", tmpl: "cat <<EOF\nEO${item.v}F\nEOF", want: func(v string) string { return "EO" + v + "F\n" }},
	{name: "heredoc after text", tmpl: "cat <<EOF\nx${item.v}\nEOF", want: func(v string) string { return "x" + v + "\n" }},
	{
		name: "quoted heredoc in command substitution", tmpl: "printf '%s' \"$(cat <<'EOF'\n${item.v}\nEOF\n)\"", want: trimmed,
		refuse: func(v string) bool {
			return breaksHeredoc(v, true) || strings.Contains(v, "\x01\x01") || strings.Contains(v, "\x01\x7f")
		},
	},
	{
		name: "quoted heredoc in backquotes", tmpl: "x=`cat <<'EOF'\n${item.v}\nEOF\n`; printf '%s' \"$x\"", want: trimmed,
		refuse: func(v string) bool { return breaksHeredoc(v, false) },
	},
	{name: "heredoc with tabs stripped", tmpl: "cat <<-EOF\n\t${item.v}\n\tEOF", want: withNewline},
	{name: "heredoc in command substitution", tmpl: "printf '%s' \"$(cat <<EOF\n${item.v}\nEOF\n)\"", want: trimmed},
	{name: "heredoc in backquotes", tmpl: "x=`cat <<EOF\n${item.v}\nEOF\n`; printf '%s' \"$x\"", want: trimmed},
	{
		name: "quoted heredoc", tmpl: "cat <<'EOF'\n${item.v}\nEOF", want: withNewline,
		refuse: func(v string) bool { return breaksHeredoc(v, false) },
	},
	{
		name: "quoted heredoc twice", tmpl: "cat <<\"EOF\"\n${item.v}${item.v}\nEOF", want: func(v string) string { return v + v + "\n" },
		refuse: func(v string) bool { return breaksHeredoc(v+v, false) },
	},
	{
		name: "double quotes in heredoc command substitution", tmpl: "cat <<EOF\n$(printf '%s' \"${item.v}\")\nEOF",
		want: func(v string) string { return trimmed(v) + "\n" },
		refuse: func(v string) bool {
			_, rest, _ := strings.Cut(strings.NewReplacer(`\`, `\\`, `$`, `\$`, "`", "\\`", `"`, `\"`).Replace(v), "\n")
			return breaksHeredoc(rest+`")`, false)
		},
	},
}

// shells are the shells the property tests run: sh (dash here) and bash.
func shells() []string {
	list := []string{"/bin/sh"}
	if _, err := os.Stat("/bin/bash"); err == nil {
		list = append(list, "/bin/bash")
	}
	return list
}

// deliver expands each case's template with item.v set to each value and
// runs the commands as one script per shell, the command for case C and
// value N writing to $OUT/C-N. It reports output that differs from want,
// anything written to stderr and any file left in the working directory.
func deliver(t *testing.T, cases []shellCase, values []string) {
	t.Helper()
	type sent struct {
		sc       shellCase
		v, cmd   string
		filename string
	}
	var script strings.Builder
	var all []sent
	for c, sc := range cases {
		tp, err := Parse(sc.tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", sc.tmpl, err)
		}
		for n, v := range values {
			cmd, err := tp.Expand(MapLookup(map[string]any{"item": map[string]any{"v": v}}), Shell)
			if refused := sc.refuse != nil && sc.refuse(v); refused || err != nil {
				if !refused || err == nil {
					t.Errorf("%s: Expand(%q) = %q, %v; want an error: %t", sc.name, v, cmd, err, refused)
				}
				continue
			}
			s := sent{sc, v, cmd, fmt.Sprintf("%d-%d", c, n)}
			fmt.Fprintf(&script, "{\n%s\n} >\"$OUT/%s\"\n", cmd, s.filename)
			all = append(all, s)
		}
	}
	for _, sh := range shells() {
		out := t.TempDir()
		if err := run(t.TempDir(), sh, script.String(), "OUT="+out); err != nil {
			t.Errorf("%s: %v\nscript: %.2000q", sh, err, script.String())
		}
		for _, s := range all {
			got, err := os.ReadFile(filepath.Join(out, s.filename))
			if want := s.sc.want(s.v); err != nil || string(got) != want {
				t.Errorf("%s %s: value %q: command %q printed %q (%v), want %q", sh, s.sc.name, s.v, s.cmd, got, err, want)
			}
		}
	}
}

// run runs sh -c script in dir. It fails when the script fails, writes to
// stderr or leaves a file in dir.
func run(dir, sh, script string, env ...string) error {
	c := exec.Command(sh, "-c", script)
	c.Dir = dir
	c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	if stderr.Len() > 0 {
		err = errors.Join(err, fmt.Errorf("stderr: %s", stderr.String()))
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		err = errors.Join(err, fmt.Errorf("the commands created %s", entries[0].Name()))
	}
	return err
}

// TestShellDelivery checks that every hostile value reaches the command
// intact, in every context and shell, without running anything. With
// -short it delivers hostileShort.
func TestShellDelivery(t *testing.T) {
	values := hostile
	if testing.Short() {
		values = hostileShort
	}
	for _, sc := range shellCases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			deliver(t, []shellCase{sc}, values)
		})
	}
}

// FuzzExpandShell delivers a value in every context and shell. Its seeds,
// which start hundreds of shells, do not run with -short.
func FuzzExpandShell(f *testing.F) {
	if testing.Short() {
		f.Skip("-short: the seeds start hundreds of shells")
	}
	for _, v := range hostile {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.IndexByte(v, 0) >= 0 || len(v) > 4096 {
			t.Skip("NUL bytes cannot reach a shell")
		}
		deliver(t, shellCases, []string{v})
	})
}

func FuzzParse(f *testing.F) {
	for _, sc := range shellCases {
		f.Add(sc.tmpl, "x")
	}
	for _, tc := range expandTests {
		f.Add(tc.tmpl, "a'b")
	}
	f.Fuzz(func(t *testing.T, tmpl, v string) {
		tp, err := Parse(tmpl)
		if err != nil {
			return
		}
		if tp.String() != tmpl {
			t.Fatalf("String() = %q, want %q", tp.String(), tmpl)
		}
		look := func(path string) (any, bool) { return v, !strings.HasPrefix(path, "X") }
		for _, mode := range []Mode{Shell, Plain} {
			_, _ = tp.Expand(look, mode)
		}
		_ = tp.Refs()
		// With nothing defined, the shell gets the template as written,
		// except what no shell reads: runner's namespaces, the default of
		// a path (a.b), Prodigy's |default:.
		none := func(string) (any, bool) { return nil, false }
		runners := func(p string) bool { return namespaced(p) || strings.ContainsAny(p, ".[") }
		if out, err := tp.Expand(none, Shell); err == nil && !slices.ContainsFunc(tp.Refs(), runners) && !strings.Contains(tmpl, prodigyDefault) && out != tmpl {
			t.Fatalf("with nothing defined Expand = %q, want the template unchanged", out)
		}
	})
}
