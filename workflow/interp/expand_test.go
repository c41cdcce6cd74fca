package interp

import (
	"errors"
	"math"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var testVars = map[string]any{
	"REGION": "eu west",
	"EMPTY":  "",
	"item": map[string]any{
		"name":    "it's",
		"special": "$a \"b\" \\c `d`",
		"tags":    []any{"a", "b c"},
		"a":       map[string]any{"b": "deep"},
		"obj":     map[string]any{"b": 1, "a": []any{1, "x"}},
		"html":    "<a&b>",
		"nl":      "a\nb",
		"eof":     "EOF",
		"eofline": "a\nEOF",
		"eofcmd":  "EOF(touch PWNED)",
		"tab":     "\tx",
		"accent":  "Eé",
		"ctl":     "\x01\x01",
		"nul":     "a\x00b",
		"nan":     map[string]any{"x": math.NaN()},
		"nil":     nil,
		"yes":     true,
		"int":     7,
		"neg":     -4,
		"three":   3.0,
		"half":    2.5,
		"big":     1e21,
	},
	"steps":       map[string]any{"build-linux": map[string]any{"output": "ok"}},
	"build-linux": map[string]any{"output": "ok"},
	"shell":       map[string]any{"output": Unavailable{Reason: "not kept"}},
	"skipped":     map[string]any{"output": Unavailable{Reason: "skipped"}},
	"map":         map[string]any{"results": []any{"r1", "r2"}},
}

var expandTests = []struct {
	name, tmpl string
	mode       Mode
	want       string
	err        string // substring of the Parse or Expand error
}{
	// syntax
	{name: "braced", tmpl: `echo ${REGION}`, want: `echo 'eu west'`},
	{name: "bare name", tmpl: `echo $REGION/x`, want: `echo 'eu west'/x`},
	{name: "bare name is the longest identifier", tmpl: `echo $REGIONx`, want: `echo $REGIONx`},
	{name: "nested path", tmpl: `echo ${item.a.b}`, want: `echo 'deep'`},
	{name: "index", tmpl: `echo ${item.tags[1]}`, want: `echo 'b c'`},
	{name: "hyphen in step name", tmpl: `echo ${steps.build-linux.output}`, want: `echo 'ok'`},
	{name: "hyphen in a first segment before a dot", tmpl: `echo ${build-linux.output}`, want: `echo 'ok'`},
	{name: "sh default with a dot stays sh's", tmpl: `echo ${HOST-example.com} ${HOST-x}`, want: `echo ${HOST-example.com} ${HOST-x}`},
	{name: "unavailable value fails with its reason", tmpl: `echo ${shell.output}`, err: "not kept"},
	{name: "unavailable value takes the default", tmpl: `echo ${shell.output:-none} ${skipped.output:-none}`, want: `echo 'none' 'none'`},
	{name: "string list joined", tmpl: `echo ${map.results} "${map.results}"`, want: `echo 'r1, r2' "r1, r2"`},
	{name: "string list as json", tmpl: `echo ${map.results|json}`, want: `echo '["r1","r2"]'`},
	{name: "map as json, keys sorted", tmpl: `echo ${item.obj}`, want: `echo '{"a":[1,"x"],"b":1}'`},
	{name: "default unused", tmpl: `echo ${REGION:-x}`, want: `echo 'eu west'`},
	{name: "default for empty value", tmpl: `echo ${EMPTY:-d e}`, want: `echo 'd e'`},
	{name: "default for nil value", tmpl: `echo ${item.nil:-d}`, want: `echo 'd'`},
	{name: "default for undefined namespaced path", tmpl: `echo "${item.nope:-a b}"`, want: `echo "a b"`},
	{name: "empty default", tmpl: `echo x${item.nope:-}y`, want: `echo x''y`},
	{name: "raw", tmpl: `echo ${item.name|raw}`, want: `echo it's`},
	{name: "json string", tmpl: `echo ${item.name|json}`, want: `echo '"it'\''s"'`},
	{name: "json without html escaping", tmpl: `echo ${item.html|json}`, want: `echo '"<a&b>"'`},
	{name: "json in double quotes", tmpl: `echo "${item.tags|json}"`, want: `echo "[\"a\",\"b c\"]"`},
	{name: "nil", tmpl: `echo ${item.nil}`, want: `echo ''`},
	{name: "bool", tmpl: `echo ${item.yes}`, want: `echo 'true'`},
	{name: "int", tmpl: `echo ${item.int} ${item.neg}`, want: `echo '7' '-4'`},
	{name: "floats", tmpl: `echo ${item.three} ${item.half} ${item.big}`, want: `echo '3' '2.5' '1e+21'`},
	{name: "nil lookup leaves plain names", tmpl: `echo ${REGION}`, want: `echo ${REGION}`},

	// left for the shell
	{name: "shell expansions", tmpl: `echo $HOME ${HOME} ${v%%.*} ${#x} ${v/a/b} ${x:=y} ${x-y} ${a[@]} ${!r} $1 $@ $$ $? $# $-`, want: `echo $HOME ${HOME} ${v%%.*} ${#x} ${v/a/b} ${x:=y} ${x-y} ${a[@]} ${!r} $1 $@ $$ $? $# $-`},
	{name: "undefined plain name with default", tmpl: `echo ${FOO:-x}`, want: `echo ${FOO:-x}`},
	{name: "escaped dollar", tmpl: `echo \${REGION} \$REGION "\$REGION"`, want: `echo \${REGION} \$REGION "\$REGION"`},
	{name: "pid then brace", tmpl: `echo $${REGION}`, want: `echo $${REGION}`},
	{name: "shell default with expansion", tmpl: `echo ${FOO:-$HOME}`, want: `echo ${FOO:-$HOME}`},
	{name: "shell default with a nested plain name", tmpl: `echo "${FOO:-x/${HOME}}"`, want: `echo "${FOO:-x/${HOME}}"`},

	// placeholders nested in defaults: runner picks, the whole text is escaped
	{name: "nested default in double quotes", tmpl: `mkdir "${OUT_DIR:-out/${item.special}}"`, want: "mkdir \"out/\\$a \\\"b\\\" \\\\c \\`d\\`\""},
	{name: "nested default unquoted", tmpl: `mkdir ${OUT_DIR:-out/${item.name}}`, want: `mkdir 'out/it'\''s'`},
	{name: "nested default unused", tmpl: `mkdir "${REGION:-out/${item.name}}"`, want: `mkdir "eu west"`},
	{name: "nested default for an empty value", tmpl: `echo ${EMPTY:-${REGION}/${item.tags[1]}}`, want: `echo 'eu west/b c'`},
	{name: "nested default twice", tmpl: `echo ${A:-${B:-${item.a.b}}-x}`, want: `echo 'deep-x'`},
	{name: "nested default with a filter", tmpl: `echo ${A:-${item.tags|json}}`, want: `echo '["a","b c"]'`},
	{name: "nested undefined namespaced path", tmpl: `echo ${A:-${item.nope}}`, err: `undefined variable "item.nope"`},
	{name: "nested shell name in a runner default", tmpl: `echo ${item.nope:-${HOME}/x}`, err: "${HOME} in the default is not a runner variable"},
	{name: "nested too deep", tmpl: `echo ${A:-${A:-${A:-${A:-${A:-${A:-${A:-${A:-${A:-${item.a}}}}}}}}}}`, err: "nested more than 8 deep"},
	{name: "bare name inside single quotes", tmpl: `awk '{print $REGION}'`, want: `awk '{print $REGION}'`},
	{name: "bare name in a comment", tmpl: `echo # $REGION`, want: `echo # $REGION`},
	{name: "unterminated ${ inside single quotes", tmpl: `echo '${x'`, want: `echo '${x'`},

	// contexts
	{name: "double quotes", tmpl: `echo "x ${item.special} $REGION"`, want: "echo \"x \\$a \\\"b\\\" \\\\c \\`d\\` eu west\""},
	{name: "single quotes", tmpl: `echo '${item.name}'`, want: `echo 'it'\''s'`},
	{name: "escaped quote is not a quote", tmpl: `echo \'${item.name}`, want: `echo \''it'\''s'`},
	{name: "escaped double quote inside double quotes", tmpl: `echo "\"${item.name}"`, want: `echo "\"it's"`},
	{name: "comment", tmpl: `echo a # ${item.nl}`, want: `echo a # a b`},
	{name: "hash inside a word", tmpl: `echo a#${item.name}`, want: `echo a#'it'\''s'`},
	{name: "command substitution in double quotes", tmpl: `echo "$(echo ${item.name})"`, want: `echo "$(echo 'it'\''s')"`},
	{name: "quotes in command substitution", tmpl: `echo "$(echo "${item.name}")" "${item.name}"`, want: `echo "$(echo "it's")" "it's"`},
	{name: "backquotes", tmpl: "echo `echo ${item.special}`", want: "echo `echo '\\$a \"b\" \\\\c \\`d\\`'`"},
	{name: "here-string", tmpl: `cat <<< ${item.name}`, want: `cat <<< 'it'\''s'`},
	{name: "shift is not a heredoc", tmpl: `echo $((1<<2)) ${item.name}`, want: `echo $((1<<2)) 'it'\''s'`},
	{name: "heredoc", tmpl: "cat <<EOF\n${item.special}\nEOF\necho ${item.name}", want: "cat <<EOF\n\\$a \"b\" \\\\c \\`d\\`\nEOF\necho 'it'\\''s'"},
	{name: "heredoc guards a delimiter line", tmpl: "cat <<EOF\n${item.eofline}\nEOF", want: "cat <<EOF\na\n${0+}EOF\nEOF"},
	{name: "heredoc with tabs stripped", tmpl: "cat <<-EOF\n\t${item.name}\n\tEOF", want: "cat <<-EOF\n\tit's\n\tEOF"},
	{name: "heredoc value after text", tmpl: "cat <<EOF\nx${item.eof}\nEOF", want: "cat <<EOF\nxEOF\nEOF"},
	{name: "heredoc value after delimiter-like text", tmpl: "cat <<EOF\nEO${item.name}\nEOF", want: "cat <<EOF\nEO${0+}it's\nEOF"},
	{name: "heredoc keeps a value's tabs under <<-", tmpl: "cat <<-EOF\n\t${item.tab}\n\tEOF", want: "cat <<-EOF\n\t${0+}\tx\n\tEOF"},
	{name: "quoted heredoc", tmpl: "cat <<'EOF'\n${item.special}\n$REGION\nEOF", want: "cat <<'EOF'\n$a \"b\" \\c `d`\n$REGION\nEOF"},
	{name: "two heredocs on a line", tmpl: "cat <<A - <<'B'\n${item.name}\nA\n${item.special}\nB\necho ${item.name}", want: "cat <<A - <<'B'\nit's\nA\n$a \"b\" \\c `d`\nB\necho 'it'\\''s'"},
	{name: "heredoc in command substitution", tmpl: "x=\"$(cat <<EOF\n${item.name}\nEOF\n)\" ${item.name}", want: "x=\"$(cat <<EOF\nit's\nEOF\n)\" 'it'\\''s'"},
	{name: "arithmetic", tmpl: `echo $(( ${item.int} + ${item.neg} ))`, want: `echo $(( 7 + (-4) ))`},
	{name: "bash arithmetic command", tmpl: `(( ${item.three} > 1 ))`, want: `(( 3 > 1 ))`},

	// refused contexts
	{name: "ANSI-C quotes", tmpl: `echo $'${item.name}'`, err: "$'...'"},
	{name: "inside a shell ${...}", tmpl: `echo ${FOO%${item.name}}`, err: "shell ${...} expansion"},
	{name: "arithmetic needs an integer", tmpl: `echo $(( ${item.half} ))`, err: "base-10 integer"},
	{name: "command substitution in arithmetic", tmpl: `echo $(( $(echo ${item.name}) ))`, err: "base-10 integer"},
	{name: "case inside $(...)", tmpl: `x=$(case a in a) echo;; esac); echo ${item.name}`, err: "case inside $(...)"},
	{name: "escapes inside backquotes", tmpl: "echo `echo \\$x` ${item.name}", err: "backslash escape inside `...`"},
	{name: "escaped quote in $'...'", tmpl: `echo $'a\'b' ${item.name}`, err: "dash and bash disagree"},
	{name: "heredoc operator in ((...))", tmpl: `((a<<2)); echo ${item.name}`, err: "<< inside ((...))"},
	{name: "single quote in double-quoted ${...}", tmpl: `echo "${FOO:-'}" ${item.name}`, err: "dash and bash disagree"},
	{name: "quoted $( inside \"`...`\"", tmpl: "echo \"`echo '$('`\" ${item.name}", err: "bash parses it"},
	{name: "heredoc in a heredoc body", tmpl: "cat <<A\n$(cat <<B\nb\nB\n)\nA\necho ${item.name}", err: "heredoc inside a heredoc body"},
	{name: "quoted heredoc delimiter line", tmpl: "cat <<'EOF'\n${item.eofline}\nEOF", err: `heredoc at offset 4 (line 1, column 5): a value puts the delimiter line "EOF"`},
	{name: "bash ends a heredoc in $(...) at EOF...)", tmpl: "x=$(cat <<'EOF'\n${item.eofcmd}\nEOF\n)", err: "would end it early"},
	{name: "dash drops a byte after part of the delimiter", tmpl: "cat <<'EOF'\n${item.accent}\nEOF", err: "which dash drops"},
	{name: "bash drops \\x01 in a quoted heredoc in $(...)", tmpl: "x=$(cat <<'EOF'\n${item.ctl}\nEOF\n)", err: "which bash drops"},
	{name: "NUL byte", tmpl: `echo ${item.nul}`, err: "placeholder ${item.nul} at offset 5 (line 1, column 6): value contains a NUL byte"},
	{name: "json error", tmpl: `echo ${item.nan}`, err: "encode value as json"},

	// parse errors
	{name: "unterminated ${", tmpl: "echo\n  ${x", err: `unterminated "${" at offset 7 (line 2, column 3)`},
	{name: "unterminated ${ in double quotes", tmpl: `echo "${x"`, err: `unterminated "${"`},
	{name: "unknown filter", tmpl: `echo ${item.x|foo}`, err: `unknown filter "foo"`},
	{name: "default of a path runner does not have", tmpl: `echo ${build.success:-false} ${x:-y}`, want: `echo 'false' ${x:-y}`},
	{name: "Prodigy's default filter", tmpl: `echo ${x|default:n/a} ${item.x|default:none}`, want: `echo ${x:-n/a} 'none'`},
	{name: "bad filter syntax", tmpl: `echo ${item.x|raw`, err: "bad filter"},

	// Plain mode
	{name: "plain", tmpl: `it's ${item.name} $REGION ${HOME} ${item.special}`, mode: Plain, want: "it's it's eu west ${HOME} $a \"b\" \\c `d`"},
	{name: "plain nested default", tmpl: `${OUT_DIR:-out/${item.name}} ${REGION:-${item.name}}`, mode: Plain, want: "out/it's eu west"},
	{name: "plain NUL", tmpl: `${item.nul}`, mode: Plain, want: "a\x00b"},
	{name: "plain ignores contexts", tmpl: `$'${item.name}' $(( ${item.half} ))`, mode: Plain, want: `$'it's' $(( 2.5 ))`},
}

func TestExpand(t *testing.T) {
	for _, tc := range expandTests {
		t.Run(tc.name, func(t *testing.T) {
			look := MapLookup(testVars)
			if strings.HasPrefix(tc.name, "nil lookup") {
				look = nil
			}
			tp, err := Parse(tc.tmpl)
			var got string
			if err == nil {
				got, err = tp.Expand(look, tc.mode)
			}
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %q, %v; want error containing %q", got, err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case got != tc.want:
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPassThrough checks the cases the shell owns and the namespace rule.
func TestPassThrough(t *testing.T) {
	for _, tmpl := range []string{"${HOME}", "$HOME", "${var%%.*}", "${#x}", "${FOO:-x}", "${file:-x}", "${file:+y}", "${date:1}", "${cmd:0:3}", "$uuid"} {
		t.Run(tmpl, func(t *testing.T) {
			tp, err := Parse(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := tp.Expand(MapLookup(nil), Shell); err != nil || got != tmpl {
				t.Fatalf("got %q, %v; want it unchanged", got, err)
			}
		})
	}
	t.Run("undefined namespaced path", func(t *testing.T) {
		for tmpl, path := range map[string]string{
			"echo ${item.nope}":                  "item.nope",
			"echo $error":                        "error",
			`echo "${steps.x.output|json}"`:      "steps.x.output",
			"echo '${map.missing[2]}' # ${HOME}": "map.missing[2]",
		} {
			_, err := MustParse(t, tmpl).Expand(MapLookup(testVars), Shell)
			var u *UndefinedError
			if !errors.As(err, &u) || u.Path != path {
				t.Errorf("%s: got %v, want an UndefinedError for %q", tmpl, err, path)
			}
		}
		_, err := MustParse(t, "${item.nope}").Expand(MapLookup(testVars), Shell)
		if err == nil || err.Error() != `undefined variable "item.nope"` {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("default", func(t *testing.T) {
		if got, err := MustParse(t, "${item.nope:-d}").Expand(MapLookup(testVars), Shell); err != nil || got != "'d'" {
			t.Fatalf("got %q, %v; want 'd'", got, err)
		}
	})
}

// Computed placeholders read from their braces to the one that closes
// them: the lookup gets the whole text; one it does not define is an
// error, never text for the shell; ${uuid} is new at each read.
func TestComputed(t *testing.T) {
	tp := MustParse(t, `echo ${cmd:awk '{print $1}' f} "${file:a b.txt}" ${json:$.x[0]:from:v} ${date:%Y}`)
	want := []string{"cmd:awk '{print $1}' f", "file:a b.txt", "json:$.x[0]:from:v", "date:%Y"}
	if got := tp.Refs(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Refs() = %q, want %q", got, want)
	}
	look := func(path string) (any, bool) { return "<" + path + ">", true }
	if got, err := tp.Expand(look, Shell); err != nil || got != `echo '<cmd:awk '\''{print $1}'\'' f>' "<file:a b.txt>" '<json:$.x[0]:from:v>' '<date:%Y>'` {
		t.Errorf("got %s, %v", got, err)
	}
	var u *UndefinedError
	if _, err := MustParse(t, "echo ${file:x}").Expand(MapLookup(nil), Shell); !errors.As(err, &u) {
		t.Errorf("undefined ${file:x}: got %v, want an UndefinedError", err)
	}
	if _, err := Parse("echo ${cmd:echo {x}"); err == nil {
		t.Error("an unterminated ${cmd: was accepted")
	}
	a, _ := MustParse(t, "${uuid}").Expand(MapLookup(nil), Plain)
	b, _ := MustParse(t, "${uuid}").Expand(MapLookup(nil), Plain)
	if len(a) != 36 || a[14] != '4' || a == b {
		t.Errorf("${uuid}: %q then %q, want two version 4 UUIDs", a, b)
	}
	if got, _ := MustParse(t, "${uuid}").Expand(MapLookup(map[string]any{"uuid": "mine"}), Plain); got != "mine" {
		t.Errorf("a variable named uuid: got %q", got)
	}
}

func TestRefsAndString(t *testing.T) {
	const src = `echo ${item.a.b} "$REGION" '$X' ${x%%y} ${steps.s.output:-${A:-${item.b}}} # ${item.tags[0]|json}`
	tp := MustParse(t, src)
	want := []string{"item.a.b", "REGION", "X", "steps.s.output", "A", "item.b", "item.tags[0]"}
	if got := tp.Refs(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Refs() = %q, want %q", got, want)
	}
	if tp.String() != src {
		t.Errorf("String() = %q, want %q", tp.String(), src)
	}
}

func TestConcurrentExpand(t *testing.T) {
	tp := MustParse(t, "cat <<EOF\n${item.name}\nEOF\necho \"${item.special}\" ${item.tags[1]}")
	want, err := tp.Expand(MapLookup(testVars), Shell)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got, err := tp.Expand(MapLookup(testVars), Shell); err != nil || got != want {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	wg.Wait()
}

// MustParse parses src or fails the test.
func MustParse(t *testing.T, src string) *Template {
	t.Helper()
	tp, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return tp
}

// A filter with an argument, ${x|length:100}, is neither runner's nor
// Prodigy's: Prodigy leaves the placeholder as written, and runner writes
// its text in every mode, escaped so that the shell prints it and never
// expands it; it is no reference.
func TestFilterWithArgumentIsLeftAsWritten(t *testing.T) {
	tp := MustParse(t, `echo '${item.name|length:100}' "${REGION|cut:2}" ${item.int|x:y}`)
	if refs := tp.Refs(); len(refs) != 0 {
		t.Errorf("Refs() = %q, want none", refs)
	}
	want := "${item.name|length:100} ${REGION|cut:2} ${item.int|x:y}"
	if got := strings.Join(tp.AsWritten(), " "); got != want {
		t.Errorf("AsWritten() = %q, want %q", got, want)
	}
	script, err := tp.Expand(MapLookup(testVars), Shell)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("sh -c %q printed %q (%v), want %q", script, out, err, want)
	}
	if got, err := MustParse(t, `${x|length:1}/a`).Expand(MapLookup(testVars), Plain); got != "${x|length:1}/a" || err != nil {
		t.Errorf("plain: %q, %v", got, err)
	}
}
